"""Fortemi over the Model Context Protocol: tools, note resources and prompts for agents,
each running as the caller through the GraphQL schema's resolvers (see :mod:`.gateway`)."""
