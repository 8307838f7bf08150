"""The semantic leg takes chunks for the notes it wants; when one long note crowds the
nearest chunks, it takes more of them rather than reading every vector."""

from __future__ import annotations

from fortemi.retrieval.search import SearchMode
from tests.integration.retrieval.conftest import Index, Search, Write

_TOPICS = (
    "quarterly invoices for the plumbing contractor",
    "the tax office's deadline for the annual return",
    "replacing the brake pads on the delivery van",
    "a sourdough starter that needs feeding twice a day",
    "the database migration planned for the weekend",
    "tuning the guitar before the concert",
)


async def test_notes_crowded_out_by_one_long_note_are_found_by_taking_more_chunks(
    write: Write, index: Index, find: Search
) -> None:
    paragraphs = [
        f"Afternoon {i}: the kitten curled up on the warm windowsill and purred in the sun, "
        "watching the birds in the garden until it fell asleep."
        for i in range(280)
    ]
    long = await write("The kitten's diary", "\n\n".join(paragraphs))
    outcome = await index(long)
    assert outcome.kind == "success"
    assert outcome.result is not None
    assert outcome.result["chunks"] > 120
    others = []
    for i in range(60):
        others.append(await write(f"Errand {i}", f"Errand {i}: {_TOPICS[i % len(_TOPICS)]}."))
        await index(others[-1])

    found = await find("a kitten asleep on a sunny windowsill", mode=SearchMode.SEMANTIC)

    assert found.hits[0].note_id == long
    assert len({hit.note_id for hit in found.hits}) == 10
    # The long note's chunks fill the first list; a second, longer one reaches the other
    # notes: no exact read of every vector.
    assert found.semantic_path is not None
    assert set(found.semantic_path.split(",")) == {"scan"}
