"""The knowledge graph: a memory's SKOS vocabulary and the concepts on its notes, links
between notes (explicit, wiki, semantic), graph maintenance (normalisation, SNN, PFNET,
Louvain communities, diagnostics) and traversal."""
