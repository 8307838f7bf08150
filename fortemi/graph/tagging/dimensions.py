"""Which dimension a keyphrase names, on the CPU: the embedding model and the phrase's head.

The CPU tier proposes phrases from the note's own words; SKOS ``related`` inference only
joins concepts of *different* dimensions, so a phrase without one is invisible to it.
A phrase's dimension among ``domain``, ``topic``, ``methodology``, ``application`` and
``technique`` is scored from two signals, each cheap and deterministic:

* **Prototypes.** Each dimension has a dozen short exemplars ("molecular biology",
  "randomized controlled trial", "fraud detection", "gradient descent"...) and four
  descriptions of its role ("a branch of science", "a study design"...). A phrase scores
  ``max cos(phrase, exemplar) + 0.5 · max cos(phrase, description)`` per dimension, with
  the vectors the tier has already computed. Nearest exemplar rather than a mean: a
  dimension spans unrelated subjects, and a centroid of "law" and "physics" is neither.
* **The head noun.** In an English noun phrase the last word says what kind of thing it is:
  "randomized controlled *trial*" is a method of study, "credit *scoring*" a use,
  "k-means *clustering*" a technique, a single word in "-ology" or "-ics" a field. A head
  in :data:`HEADS` adds :data:`HEAD_BONUS` to its dimension, enough to outvote the
  prototypes: embeddings of this size place a phrase by its subject far more than by its
  role ("BM25" lands near "information retrieval", a domain), and the head is the one
  cue for the role the phrase itself carries.

``topic`` is a subject that is not a field, a method, a use or a tool, and ``domain`` is
a closed class: fields of knowledge are few and named alike, so a phrase is a domain only
with a domain head ("-ology", "science") or an exemplar within cosine
:data:`DOMAIN_FLOOR`; otherwise what scored as a domain is a topic ("income
inequality", "obesity" sit near "economics" and "medicine" without being fields). The
floor was chosen on a development list of 32 phrases (26 right); on 40 phrases written
apart from it and from the prototypes (8 per dimension) the classifier names 32 right
(80 %, chance is 20 %; without the floor 26). That is enough for what the CPU tier needs it for
(that concepts of a note fall in different dimensions), and the generation tiers, which
read the whole note, overrule the guess when they name the same concept
(:func:`~fortemi.graph.tagging.models.merged`).

``content_type`` is never guessed from a phrase: it is the note's document type
(:mod:`~fortemi.graph.tagging.content_type`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from fortemi.inference import InferenceBackend

__all__ = [
    "DOMAIN_FLOOR",
    "HEADS",
    "HEAD_BONUS",
    "PHRASE_DIMENSIONS",
    "DimensionClassifier",
    "head_cues",
]

PHRASE_DIMENSIONS: Final = ("domain", "topic", "methodology", "application", "technique")
HEAD_BONUS: Final = 0.5
DESCRIPTION_WEIGHT: Final = 0.5
DOMAIN_FLOOR: Final = 0.6

EXEMPLARS: Final[Mapping[str, tuple[str, ...]]] = {
    "domain": (
        "computer science", "molecular biology", "medicine", "economics", "mathematics",
        "physics", "law", "chemistry", "psychology", "linguistics", "civil engineering",
        "finance", "history", "education", "ecology", "neuroscience",
    ),
    "topic": (
        "climate change", "customer churn", "protein folding", "database performance",
        "vaccine safety", "supply chain disruption", "data privacy", "team onboarding",
        "tumor growth", "urban housing", "social media use", "energy prices",
        "software releases", "knowledge sharing",
    ),
    "methodology": (
        "randomized controlled trial", "case study", "systematic review",
        "qualitative interviews", "ablation study", "benchmark evaluation", "cohort study",
        "agile development", "statistical analysis", "computer simulation",
        "survey research", "experimental design", "meta-analysis", "grounded theory",
        "test-driven development",
    ),
    "application": (
        "fraud detection", "medical diagnosis", "recommendation system", "search engine",
        "drug discovery", "autonomous driving", "customer support chatbot",
        "crop yield prediction", "spam filtering", "online banking app",
        "smart home automation", "machine translation service",
    ),
    "technique": (
        "gradient descent", "Louvain algorithm", "polymerase chain reaction",
        "linear regression", "k-means clustering", "HNSW index", "CRISPR gene editing",
        "Fourier transform", "dropout regularization", "binary search", "TF-IDF weighting",
        "backpropagation", "Kalman filter", "hash join",
    ),
}  # fmt: skip

DESCRIPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "domain": (
        "an academic discipline", "a field of knowledge", "a branch of science",
        "an area of study",
    ),
    "topic": (
        "a subject people discuss", "a theme or issue", "a phenomenon being studied",
        "a matter of concern",
    ),
    "methodology": (
        "a research method", "a study design", "a way of conducting research",
        "an approach to evaluation",
    ),
    "application": (
        "a practical use", "a product or service", "a real-world use case",
        "an industry application",
    ),
    "technique": (
        "an algorithm", "a specific technique or tool", "a laboratory procedure",
        "a computational method",
    ),
}  # fmt: skip

# Head nouns (a phrase's last word, folded) that name the kind of thing a phrase is.
HEADS: Final[Mapping[str, frozenset[str]]] = {
    "domain": frozenset({"science", "sciences", "engineering", "medicine", "theory", "learning"}),
    "methodology": frozenset(
        """trial trials study studies review reviews survey surveys analysis analyses
        evaluation evaluations experiment experiments testing design approach methodology
        framework interviews ethnography meta-analysis benchmark benchmarking""".split()
    ),
    "application": frozenset(
        """system systems application applications app apps service services platform
        tool tools detection prediction diagnosis filtering scoring search support
        recommendation recommendations automation assistant chatbot monitoring
        forecasting translation""".split()
    ),
    "technique": frozenset(
        """algorithm algorithms method methods transform regression clustering index
        indexing filter model models network networks forest blot sequencing editing
        embedding embeddings attention descent pruning hashing normalization
        normalisation regularization regularisation encoding neighbour neighbours
        neighbor neighbors reaction""".split()
    ),
}
_FIELD_SUFFIXES: Final = ("ology", "ics", "istry", "onomy", "graphy")


def head_cues(phrase: str) -> list[str]:
    """The dimensions the phrase's head noun names (usually none or one)."""
    words = phrase.casefold().split()
    if not words:
        return []
    head = words[-1]
    cues = [dimension for dimension, heads in HEADS.items() if head in heads]
    if not cues and len(words) == 1 and head.endswith(_FIELD_SUFFIXES):
        cues.append("domain")  # "epidemiology", "economics", "chemistry"
    return cues


class DimensionClassifier:
    """Names the dimension of phrases from their unit vectors (by ``backend``'s model).

    The prototypes are embedded on first use and kept: they are constants, and the
    backend's model does not change under a running worker.
    """

    def __init__(self, backend: InferenceBackend) -> None:
        self._backend = backend
        self._prototypes: list[tuple[NDArray[np.float32], NDArray[np.float32]]] | None = None

    async def _prepare(self) -> list[tuple[NDArray[np.float32], NDArray[np.float32]]]:
        if self._prototypes is None:
            texts = [
                text
                for dimension in PHRASE_DIMENSIONS
                for text in (*EXEMPLARS[dimension], *DESCRIPTIONS[dimension])
            ]
            vectors = await self._backend.embed(texts)
            prototypes = []
            at = 0
            for dimension in PHRASE_DIMENSIONS:
                examples, described = len(EXEMPLARS[dimension]), len(DESCRIPTIONS[dimension])
                prototypes.append(
                    (
                        vectors[at : at + examples],
                        vectors[at + examples : at + examples + described],
                    )
                )
                at += examples + described
            self._prototypes = prototypes
        return self._prototypes

    async def classify(self, phrases: Sequence[str], vectors: NDArray[np.float32]) -> list[str]:
        """The dimension of each phrase, given its unit vector (row ``i`` for phrase ``i``)."""
        if not phrases:
            return []
        prototypes = await self._prepare()
        domain = PHRASE_DIMENSIONS.index("domain")
        nearest_field = (vectors @ prototypes[domain][0].T).max(axis=1)
        scores = np.stack(
            [
                (vectors @ examples.T).max(axis=1)
                + DESCRIPTION_WEIGHT * (vectors @ described.T).max(axis=1)
                for examples, described in prototypes
            ],
            axis=1,
        )
        for row, phrase in enumerate(phrases):
            for cue in head_cues(phrase):
                scores[row, PHRASE_DIMENSIONS.index(cue)] += HEAD_BONUS
        # argmax keeps the first of equal scores: the order of PHRASE_DIMENSIONS decides.
        named = [PHRASE_DIMENSIONS[int(i)] for i in scores.argmax(axis=1)]
        return [
            "topic"
            if dimension == "domain"
            and nearest_field[row] < DOMAIN_FLOOR
            and "domain" not in head_cues(phrases[row])
            else dimension
            for row, dimension in enumerate(named)
        ]
