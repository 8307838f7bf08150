from fortemi.graphql.notes.resolvers import NoteMutation, NoteQuery

__all__ = ["NoteMutation", "NoteQuery"]
