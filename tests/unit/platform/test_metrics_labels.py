"""Operation-name labels stay bounded whatever a client sends as operationName."""

from __future__ import annotations

import pytest

from fortemi.platform import metrics


@pytest.mark.parametrize(
    ("sent", "label"),
    [
        (None, "anonymous"),
        ("", "anonymous"),
        ("ListNotes", "ListNotes"),
        ("x" * 65, "other"),
        ("drop table;", "other"),
        ({"obj": "ect"}, "other"),
        (["array"], "other"),
        (7, "other"),
    ],
)
def test_operation_label_accepts_only_well_formed_names(sent: object, label: str) -> None:
    assert metrics.operation_label(sent) == label


def test_operation_labels_stop_growing_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_names", set())
    monkeypatch.setattr(metrics, "MAX_OPERATION_NAMES", 3)
    assert [metrics.operation_label(f"Op{i}") for i in range(5)] == [
        "Op0", "Op1", "Op2", "other", "other",
    ]  # fmt: skip
    assert metrics.operation_label("Op1") == "Op1"
