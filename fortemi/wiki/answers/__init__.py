"""Answers: a question's retrieval plan handed to a generation model, with citations."""
