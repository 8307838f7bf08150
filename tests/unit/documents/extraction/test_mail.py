"""E-mail: body text, headers in metadata, attachments (and forwarded messages) returned as
children within limits; HTML-only mail read for its content; mailboxes."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from fortemi.documents.extraction import ExtractionStatus, Limits
from tests.support.documents import eml_file
from tests.unit.documents.extraction._helpers import extract


def test_a_message_gives_its_body_headers_and_attachments_as_children() -> None:
    forwarded = BytesParser(policy=policy.default).parsebytes(eml_file("Earlier", "forwarded body"))
    assert isinstance(forwarded, EmailMessage)
    data = eml_file("Budget", "Please find the budget.", [("budget.csv", "text/csv", b"a,b\n1,2\n")],
                    forwarded=forwarded)  # fmt: skip

    found = extract(data, "budget.eml")

    assert (found.status, found.adapter) == (ExtractionStatus.DONE, "email")
    assert found.text == "# Budget\n\nPlease find the budget.\n"
    assert found.metadata["headers"]["from"] == "Ada <ada@example.org>"
    assert found.metadata["headers"]["subject"] == "Budget"
    names = [(name, mime) for name, mime, _ in found.children]
    assert names == [("budget.csv", "text/csv"), ("message-2.eml", "message/rfc822")]
    assert found.children[0][2] == b"a,b\n1,2\n"
    assert b"forwarded body" in found.children[1][2]


def test_an_html_only_message_is_read_for_its_content() -> None:
    data = (b"From: a@example.org\nSubject: News\nMIME-Version: 1.0\n"
            b"Content-Type: text/html; charset=utf-8\n\n"
            b"<html><body><nav>Menu</nav><p>The quarterly news is good.</p></body></html>\n")  # fmt: skip

    found = extract(data, "news.eml")

    assert found.status is ExtractionStatus.DONE
    assert "The quarterly news is good." in found.text


def test_attachments_past_the_member_limit_are_listed_not_returned() -> None:
    data = eml_file("Many", "body", [(f"f{n}.txt", "text/plain", b"x") for n in range(5)])

    found = extract(data, "many.eml", limits=Limits(max_archive_members=2))

    assert len(found.children) == 2
    assert [a.get("skipped") for a in found.metadata["attachments"]] == [
        None, None, "too_many_attachments", "too_many_attachments", "too_many_attachments"]  # fmt: skip


def test_a_mailbox_reads_each_message() -> None:
    data = (b"From a@example.org Mon Dec  1 10:00:00 2025\n" + eml_file("One", "first body")
            + b"\nFrom b@example.org Mon Dec  1 11:00:00 2025\n" + eml_file("Two", "second body"))  # fmt: skip

    found = extract(data, "inbox.mbox")

    assert found.metadata["messages"] == 2
    assert "# One\n\nfirst body" in found.text
    assert "# Two\n\nsecond body" in found.text


def test_bytes_that_are_no_message_fail_as_corrupt_email() -> None:
    found = extract(b"\n\n\n", "empty.eml")

    assert found.status is ExtractionStatus.FAILED
    assert found.reason is not None
    assert found.reason.startswith("corrupt_email: ")
