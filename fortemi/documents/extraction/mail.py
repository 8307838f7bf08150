"""E-mail: RFC 5322 / MIME messages (``.eml``) and mailboxes (``.mbox``), with the
standard library's ``email`` package (its modern ``policy.default`` API).

The text is the message's body (plain text preferred, else its HTML's main content),
headed by its subject; the headers go to metadata. Its attachments, and messages
forwarded as attachments, are returned as :attr:`Extracted.children` so they become
attachments of their own, within the archive limits (count and total size).
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

from fortemi.documents.extraction._run import Read, Run, TextSink, Unavailable, Unreadable
from fortemi.documents.extraction.base import Health
from fortemi.documents.extraction.webpage import html_to_text
from fortemi.documents.models import Detection

__all__ = ["MailAdapter"]

_HEADERS = ("from", "to", "cc", "reply-to", "subject", "date", "message-id", "in-reply-to")


def _parse(data: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(data)
    if not isinstance(message, EmailMessage):  # policy.default always builds these
        raise Unreadable("corrupt_email", "the parser did not build a message")
    return message


def _headers(message: EmailMessage) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in _HEADERS:
        try:
            value = message.get(name)
        except (ValueError, TypeError, IndexError):  # a malformed header is left out
            continue
        if value is not None:
            found[name] = str(value)[:1000]
    return found


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):  # an unknown charset or encoding
        payload = part.get_payload(decode=True)
        content = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if part.get_content_subtype() == "html":
        return html_to_text(content)[0]
    return content


class MailAdapter:
    name = "email"

    def health(self) -> Health:
        return Health(self.name, True, "built in (email, policy.default)")

    def read(self, data: bytes, *, filename: str | None, detection: Detection, run: Run) -> Read:
        if detection.type.name == "mbox":
            return self._mbox(data, run)
        if detection.type.name != "email":
            raise Unavailable(
                "unsupported_format",
                f"no reader for {detection.type.display_name} files ships with Fortemi; "
                "save the message as .eml",
            )
        message = _parse(data)
        headers = _headers(message)
        text = _body(message)
        if not headers and not text.strip():
            raise Unreadable("corrupt_email", "no message headers and no body found")
        subject = headers.get("subject")
        children, attachments = self._children(message, run)
        metadata: dict[str, Any] = {"headers": headers, "attachments": attachments,
                                    "defects": len(message.defects)}  # fmt: skip
        full = f"# {subject}\n\n{text}" if subject else text
        return Read(full.strip() + "\n", metadata, children=tuple(children))

    def _children(
        self, message: EmailMessage, run: Run
    ) -> tuple[list[tuple[str, str | None, bytes]], list[dict[str, Any]]]:
        children: list[tuple[str, str | None, bytes]] = []
        listed: list[dict[str, Any]] = []
        total = 0
        for number, part in enumerate(message.iter_attachments(), 1):
            run.check(f"attachment {number}")
            mime = part.get_content_type()
            if mime == "message/rfc822":
                inner = part.get_payload(0) if part.is_multipart() else None
                content = inner.as_bytes() if isinstance(inner, EmailMessage) else b""
                name = part.get_filename() or f"message-{number}.eml"
            else:
                payload = part.get_payload(decode=True)
                content = payload if isinstance(payload, bytes) else b""
                name = part.get_filename() or f"attachment-{number}"
            entry: dict[str, Any] = {"filename": name, "mime_type": mime, "size": len(content)}
            listed.append(entry)
            if len(children) >= run.limits.max_archive_members:
                entry["skipped"] = "too_many_attachments"
            elif total + len(content) > run.limits.max_archive_total_bytes:
                entry["skipped"] = "total_size_limit"
            else:
                total += len(content)
                children.append((name, mime, content))
        return children, listed

    def _mbox(self, data: bytes, run: Run) -> Read:
        sink = TextSink(run.limits.max_text_bytes)
        messages = 0
        # mbox: each message starts with a "From " line at the start of a line.
        for number, raw in enumerate(_split_mbox(data), 1):
            run.check(f"message {number}")
            message = _parse(raw)
            messages += 1
            subject = _headers(message).get("subject", "(no subject)")
            if not sink.write(f"# {subject}\n\n{_body(message).strip()}\n\n"):
                break
        return Read(sink.text(), {"messages": messages}, truncated=sink.truncated)


def _split_mbox(data: bytes) -> list[bytes]:
    chunks = data.split(b"\nFrom ")
    messages = []
    for index, chunk in enumerate(chunks):
        raw = chunk if index == 0 else b"From " + chunk
        # Drop the envelope "From " line; the RFC 5322 message follows it.
        if raw.startswith(b"From "):
            raw = raw.split(b"\n", 1)[1] if b"\n" in raw else b""
        if raw.strip():
            messages.append(raw)
    return messages
