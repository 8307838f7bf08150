"""Graph maintenance's pure parts: normalisation, SNN, PFNET's strict triangle rule,
Louvain's determinism and confidence, and the plan's skip and safety abort."""

from __future__ import annotations

import math
from uuid import UUID

import networkx as nx
import numpy as np
import pytest

from fortemi.graph.maintenance.algorithms import (
    NoteGraph,
    Pair,
    Vector,
    communities,
    knn_rows,
    knn_sets,
    normalise,
    pair,
    pfnet_prune,
    snn_scores,
)
from fortemi.graph.maintenance.indexed import IndexedGraph
from fortemi.graph.maintenance.plan import (
    SNN_SAFETY_ABORTED,
    GraphState,
    MaintenanceSettings,
    Step,
    plan_maintenance,
)


def _id(n: int) -> UUID:
    return UUID(int=n)


def _at(degrees: float) -> Vector:
    angle = math.radians(degrees)
    return np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)


def test_normalise_is_min_max_then_gamma() -> None:
    assert normalise(0.8, 0.7, 0.9) == pytest.approx(0.5)
    assert normalise(0.8, 0.7, 0.9, gamma=2.0) == pytest.approx(0.25)
    assert normalise(0.75, 0.75, 0.75) == 1.0
    assert normalise(0.95, 0.7, 0.9) == 1.0


def test_knn_is_exact_and_independent_of_the_block_size() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(40, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    whole = knn_sets(matrix, 4, block=1024)
    assert whole == knn_sets(matrix, 4, block=7)
    sims = matrix @ matrix.T
    np.fill_diagonal(sims, -np.inf)
    assert whole[0] == frozenset(int(j) for j in np.argsort(-sims[0])[:4])
    assert all(i not in neighbours and len(neighbours) == 4 for i, neighbours in enumerate(whole))


def test_snn_is_the_shared_share_of_k_nearest_neighbours() -> None:
    knn = [frozenset({1, 2, 3}), frozenset({0, 2, 3}), frozenset({5, 6, 7})]
    assert snn_scores([(0, 1), (0, 2)], knn, 3) == [pytest.approx(2 / 3), 0.0]


def test_pfnet_prunes_the_longest_side_when_a_shorter_path_exists() -> None:
    a, w, c = _id(1), _id(2), _id(3)
    vectors = {a: _at(0), w: _at(20), c: _at(40)}
    graph: NoteGraph = nx.Graph([(a, w), (w, c), (a, c)])
    assert pfnet_prune([pair(a, c), pair(a, w), pair(w, c)], graph, vectors) == {pair(a, c)}


def test_pfnet_keeps_every_side_of_an_equilateral_triangle() -> None:
    a, b, c = _id(1), _id(2), _id(3)
    vectors = {a: _at(0), b: _at(120), c: _at(240)}
    graph: NoteGraph = nx.Graph([(a, b), (b, c), (a, c)])
    assert pfnet_prune([pair(a, b), pair(b, c), pair(a, c)], graph, vectors) == set()


def test_pfnet_uses_only_shared_neighbours_as_paths() -> None:
    a, w, c = _id(1), _id(2), _id(3)
    vectors = {a: _at(0), w: _at(20), c: _at(40)}
    graph: NoteGraph = nx.Graph([(a, w), (a, c)])  # no W-C edge: no path through W
    assert pfnet_prune([pair(a, c)], graph, vectors) == set()


def _two_cliques() -> NoteGraph:
    graph: NoteGraph = nx.Graph()
    left = [_id(n) for n in range(1, 6)]
    right = [_id(n) for n in range(11, 15)]
    for group in (left, right):
        graph.add_weighted_edges_from(
            (x, y, 1.0) for i, x in enumerate(group) for y in group[i + 1 :]
        )
    graph.add_edge(left[0], right[0], weight=0.1)
    graph.add_node(_id(99))
    return graph


def test_louvain_is_deterministic_with_ids_by_size_then_smallest_note() -> None:
    first = communities(_two_cliques())
    shuffled: NoteGraph = nx.Graph()
    edges = list(_two_cliques().edges(data=True))
    shuffled.add_nodes_from(reversed(list(_two_cliques().nodes)))
    shuffled.add_edges_from(reversed(edges))
    second = communities(shuffled)
    assert first == second
    assert [len(m) for m in first.members] == [5, 4, 1]
    assert first.community[_id(1)] == 0
    assert first.community[_id(11)] == 1
    assert first.community[_id(99)] == 2
    assert first.modularity > 0.3


def test_confidence_is_the_share_of_weighted_degree_inside_the_community() -> None:
    found = communities(_two_cliques())
    assert found.confidence[_id(2)] == 1.0
    # Note 1: four edges of weight 1 inside, one of 0.1 to the other clique.
    assert found.confidence[_id(1)] == pytest.approx(4 / 4.1)
    assert found.confidence[_id(99)] == 1.0  # isolated: its own community, wholly


def _dense_state(n: int = 12) -> GraphState:
    rng = np.random.default_rng(7)
    notes = [_id(i) for i in range(1, n + 1)]
    vectors = {}
    for note in notes:
        v = rng.normal(size=16).astype(np.float32)
        vectors[note] = v / np.linalg.norm(v)
    semantic: dict[Pair, float] = {
        pair(a, b): 0.8 for i, a in enumerate(notes) for b in notes[i + 1 :]
    }
    return GraphState(notes=notes, vectors=vectors, semantic=semantic)


def test_snn_is_skipped_when_the_mean_degree_is_below_k() -> None:
    state = _dense_state()
    sparse = GraphState(
        notes=state.notes, vectors=state.vectors, semantic=dict(list(state.semantic.items())[:10])
    )
    plan = plan_maintenance(sparse, list(Step), MaintenanceSettings())
    assert plan.metrics["snn"]["status"] == "skipped"
    assert plan.snn is None
    assert plan.deleted == frozenset()
    assert plan.communities is not None


def test_snn_that_would_keep_too_little_aborts_before_the_later_steps() -> None:
    state = _dense_state()
    harsh = MaintenanceSettings(snn_threshold=0.99)
    plan = plan_maintenance(state, list(Step), harsh)
    assert plan.aborted == SNN_SAFETY_ABORTED
    assert plan.metrics["snn"]["status"] == "aborted"
    assert plan.pruned is None
    assert plan.communities is None
    allowed = plan_maintenance(state, list(Step), harsh, allow_aggressive_pruning=True)
    assert allowed.aborted is None
    assert allowed.deleted
    assert allowed.communities is not None


def test_snn_keeps_pairs_at_or_above_the_threshold_with_their_scores() -> None:
    plan = plan_maintenance(_dense_state(), [Step.SNN], MaintenanceSettings())
    assert plan.aborted is None
    assert plan.snn is not None
    assert all(score >= 0.10 for score in plan.snn.values())
    assert set(plan.snn).isdisjoint(plan.deleted)
    assert len(plan.snn) + len(plan.deleted) == len(_dense_state().semantic)


def test_steps_not_asked_for_do_not_run() -> None:
    plan = plan_maintenance(_dense_state(), [Step.NORMALIZE], MaintenanceSettings())
    assert (plan.snn, plan.pruned, plan.communities) == (None, None, None)
    assert plan.metrics["normalize"] == {"min": 0.8, "max": 0.8, "gamma": 1.0}


def test_knn_ranks_only_the_columns_above_a_sampled_bound_and_stays_exact() -> None:
    # Enough rows for the sampled bound (4 x 512), clustered so neighbours are close calls.
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(20, 16))
    matrix = (centres[rng.integers(0, 20, size=2500)] + rng.normal(size=(2500, 16)) * 0.3).astype(
        np.float32
    )
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    found = knn_sets(matrix, 13, block=600)
    sims = matrix @ matrix.T
    np.fill_diagonal(sims, -np.inf)
    exact = [frozenset(int(j) for j in np.argsort(-row, kind="stable")[:13]) for row in sims]
    assert found == exact


def test_a_tie_at_the_kth_neighbour_goes_to_the_smaller_row() -> None:
    # Entries are multiples of 1/8, so every similarity is exact whatever order the
    # matrix product sums in: rows 700 and 1500 (7 and 30) are row 0 itself, an exact
    # tie for its one nearest neighbour. 2,100 rows take the sampled-bound path, 40 rows
    # the direct one.
    for n, twins in ((2100, (700, 1500)), (40, (7, 30))):
        rng = np.random.default_rng(11)
        matrix = (rng.integers(-2, 3, size=(n, 16)) / 8).astype(np.float32)
        matrix[0] = 0.5
        for twin in twins:
            matrix[twin] = matrix[0]
        assert knn_rows(matrix, 1)[0].tolist() == [twins[0]]


def test_modularity_is_networkx_modularity_of_the_same_partition() -> None:
    graph = _two_cliques()
    found = communities(graph, resolution=0.7)
    expected = nx.community.modularity(
        graph, [set(m) for m in found.members], weight="weight", resolution=0.7
    )
    assert found.modularity == pytest.approx(expected, rel=1e-12)


def test_a_note_without_a_vector_is_no_shorter_path() -> None:
    a, w, c = _id(1), _id(2), _id(3)
    vectors = {a: _at(0), c: _at(40)}  # W has none: its distances are unknown
    graph: NoteGraph = nx.Graph([(a, w), (w, c), (a, c)])
    assert pfnet_prune([pair(a, c), pair(a, w), pair(w, c)], graph, vectors) == set()


def test_the_indexed_graph_numbers_notes_in_id_order_and_maps_pairs_back() -> None:
    rng = np.random.default_rng(2)
    notes = [UUID(int=int(x)) for x in rng.integers(1, 2**62, size=30)]
    semantic = {pair(notes[i], notes[i + 1]): 0.5 + i / 100 for i in range(0, 28)}
    other = {(notes[3], notes[20]): 0.4, (notes[20], notes[3]): 0.9}
    vectors = {note: _at(i) for i, note in enumerate(notes[:25])}
    state = GraphState(notes=notes, vectors=vectors, semantic=semantic, other=other)
    graph = IndexedGraph.of(state)
    assert list(graph.notes) == sorted(notes)
    assert bool(np.all(graph.semantic.a < graph.semantic.b))
    assert graph.pairs(np.ones(len(graph.semantic), dtype=bool)) == sorted(semantic)
    scores = graph.semantic.score.tolist()
    assert dict(zip(graph.pairs(np.ones(28, dtype=bool)), scores, strict=True)) == semantic
    # The explicit pair given both ways is one edge, at its larger score.
    assert len(graph.other) == 1
    assert graph.other.score.tolist() == [0.9]
    # Notes 25..29 have no vector; the others' rows follow id order.
    having = [i for i, note in enumerate(graph.notes) if note in vectors]
    assert graph.rows[having].tolist() == list(range(25))
    assert all(graph.rows[i] == -1 for i, note in enumerate(graph.notes) if note not in vectors)
    assert np.allclose(graph.matrix, np.vstack([vectors[graph.notes[i]] for i in having]))
