"""Parsing a create body: the fields and their kinds, input items, references to stored
items, tool outputs, NUL characters; the one place a request becomes a CreateRequest."""
