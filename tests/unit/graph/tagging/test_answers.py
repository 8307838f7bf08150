"""Reading a generation tier's answer, merging tiers' findings, and what an escalation
carries: pure functions over values made here."""

from __future__ import annotations

import json

import pytest

from fortemi.graph.tagging.generation import ANSWER_SCHEMA, read_answer
from fortemi.graph.tagging.models import Found, carried, merged
from fortemi.inference import Generation


def _gen(text: str, *, finish: str = "stop", refusal: str | None = None) -> Generation:
    return Generation(text=text, model="m", finish_reason=finish, refusal=refusal)


def _item(path: list[str], dimension: str = "topic", confidence: float = 0.8) -> dict[str, object]:
    return {"path": path, "dimension": dimension, "confidence": confidence}


def test_a_valid_answer_gives_its_concepts_best_first_with_duplicates_folded() -> None:
    text = json.dumps(
        {
            "concepts": [
                _item(["ML"], "domain", 0.5),
                _item(["ml", "transformers"], "technique", 0.9),
                _item(["Ml"], "domain", 0.7),
            ]
        }
    )
    reading = read_answer(_gen(text), "fast")
    assert reading.problem is None
    assert [(f.path, f.confidence, f.tier) for f in reading.concepts] == [
        (("ml", "transformers"), 0.9, "fast"),
        (("Ml",), 0.7, "fast"),
    ]


def test_a_path_written_as_one_slashed_label_is_split() -> None:
    reading = read_answer(_gen(json.dumps({"concepts": [_item(["ml / nlp/ parsing"])]})), "fast")
    assert reading.concepts[0].path == ("ml", "nlp", "parsing")


@pytest.mark.parametrize(
    ("generation", "problem"),
    [
        (_gen("", refusal="No."), "refused"),
        (_gen("Sorry, I cannot tag this."), "refused"),
        (_gen('{"concepts": ['), "malformed_json"),
        (_gen('{"concepts": [', finish="length"), "truncated"),
        (_gen(json.dumps({"concepts": [_item([])]})), "schema_violation"),
        (_gen(json.dumps({"concepts": [_item(["x"], "mood")]})), "schema_violation"),
        (_gen(json.dumps([_item(["x"])])), "schema_violation"),
    ],
)
def test_an_unusable_answer_is_nothing_with_the_reason(
    generation: Generation, problem: str
) -> None:
    reading = read_answer(generation, "fast")
    assert (reading.concepts, reading.problem) == ([], problem)


def test_the_schema_has_no_references_for_servers_that_do_not_follow_them() -> None:
    text = json.dumps(ANSWER_SCHEMA)
    assert "$ref" not in text
    assert "$defs" not in text
    item = ANSWER_SCHEMA["properties"]["concepts"]["items"]
    assert set(item["required"]) == {"path", "dimension", "confidence"}


def _found(label: str, confidence: float, tier: str, *, primary: bool = False) -> Found:
    return Found((label,), None, confidence, confidence, tier, primary)


def test_merging_keeps_the_later_tiers_version_with_the_better_confidence() -> None:
    earlier = [_found("graphs", 0.9, "cpu", primary=True), _found("louvain", 0.4, "cpu")]
    later = [
        Found(("network science", "graphs"), "domain", 0.6, 0.7, "fast"),
        _found("modularity", 0.8, "fast", primary=True),
    ]
    out = {f.key: f for f in merged(earlier, later, limit=15)}
    assert out["graphs"].path == ("network science", "graphs")
    assert (out["graphs"].dimension, out["graphs"].confidence) == ("domain", 0.9)
    assert set(out) == {"graphs", "louvain", "modularity"}
    assert [f.key for f in out.values() if f.primary] == ["modularity"]


def test_merging_keeps_the_most_confident_up_to_the_limit_and_one_primary() -> None:
    found = [_found(f"c{i}", i / 20, "cpu") for i in range(20)]
    out = merged([], found, limit=15)
    assert len(out) == 15
    assert min(f.confidence for f in out) == 5 / 20
    assert sum(f.primary for f in out) == 1


def test_an_escalation_payload_round_trips_its_carried_concepts() -> None:
    concepts = [_found("graphs", 0.9, "cpu", primary=True)]
    payload = {
        "note_id": "x",
        "escalation": {
            "fromTier": "cpu",
            "carried": {"tier": "cpu", "concepts": [f.as_json() for f in concepts]},
        },
    }
    assert carried(payload) == ("cpu", concepts)


def test_malformed_carried_concepts_are_skipped_not_trusted() -> None:
    payload = {
        "escalation": {
            "carried": {
                "tier": "cpu",
                "concepts": [
                    {"path": "not a list"},
                    {"path": ["ok"], "dimension": "nonsense"},
                    {"path": ["fine"], "confidence": 7},
                    "junk",
                ],
            }
        }
    }
    tier, found = carried(payload)
    assert tier == "cpu"
    assert [(f.path, f.confidence) for f in found] == [(("fine",), 1.0)]
    assert carried({"note_id": "x"}) == (None, [])
