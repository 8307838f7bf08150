"""The Ollama-API double's extractive reader: it cites the numbered chunks of a retrieval
prompt that share the most question words, so that benchmarks can measure the share of
the context a reader cites without a model."""

from __future__ import annotations

from uuid import uuid4

from fortemi.wiki.retrieve.layout import INSTRUCTIONS, block, question_block
from fortemi.wiki.retrieve.models import Candidate
from tests.support.ollama_double import extractive_answer


def _chunk(number: int, heading: str, text: str) -> Candidate:
    return Candidate(
        chunk_id=number, note_id=uuid4(), ordinal=0, heading=heading, text=text,
        title=heading, path=f"notes/{number}.md", project=None, skill=None,
        tfidf=0.0, metadata=0.0, semantic=None, fused=0.0, relevance=0.0,
    )  # fmt: skip


def _prompt(question: str, *texts: str) -> str:
    chunks = [_chunk(n, f"Part {n}", text) for n, text in enumerate(texts, start=1)]
    return (
        INSTRUCTIONS
        + "".join(block(n, c) for n, c in enumerate(chunks, start=1))
        + question_block(question)
    )


def test_the_reader_cites_the_chunks_above_half_the_best_overlap_in_prompt_order() -> None:
    prompt = _prompt(
        "Which team owns the logging namespace in the cluster?",
        "# Pods\nPods crash when their memory limit is reached.",
        "# Namespaces\nThe platform team owns the logging namespace. It also runs alerting.",
        "The cluster's logging namespaces are listed by team.",
        "Logging is shipped to Loki.",
    )
    # Overlaps: 0, 4 (team, owns, logging, namespace), 3 (cluster, logging, team), 1.
    assert extractive_answer(prompt) == (
        "The platform team owns the logging namespace. [2] "
        "The cluster's logging namespaces are listed by team. [3]"
    )


def test_function_words_and_the_instructions_do_not_count_as_overlap() -> None:
    prompt = _prompt("What is the answer to this?", "This is what there is.", "The cited chunk.")
    assert extractive_answer(prompt) == "I do not know: the chunks do not say."


def test_the_reader_reads_only_the_question_line_and_the_numbered_chunks() -> None:
    prompt = _prompt("How do I rename a block id?", "Renaming a block id updates its links.")
    assert extractive_answer(prompt) == "Renaming a block id updates its links. [1]"
    assert extractive_answer("no chunks here\nQuestion: rename?\nAnswer:").startswith("I do not")
