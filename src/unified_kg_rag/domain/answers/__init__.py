"""Answers: extractive answers, citations, abstention, and global search's map-reduce steps."""
