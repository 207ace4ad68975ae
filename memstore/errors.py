"""Errors raised by memstore.

Every error carries a message that names the problem and, where there is one,
the fix.  The CLI prints ``memstore: error: <message>`` and exits non-zero;
library callers can catch :class:`MemstoreError`.
"""

from __future__ import annotations


class MemstoreError(Exception):
    """Base class for every error memstore raises on purpose."""

    #: Exit status the CLI uses for this error.
    exit_code: int = 1


class UsageError(MemstoreError):
    """The caller asked for something that cannot be done as asked."""

    exit_code = 2


class DatabaseError(MemstoreError):
    """The database file cannot be opened, read or written."""


class SchemaError(DatabaseError):
    """The file is not a memstore database, or is newer than this code."""


class InputError(MemstoreError):
    """An imported file, a date or another input is malformed."""


class DateFormatError(InputError):
    """A date or timestamp could not be parsed."""


class NotFoundError(MemstoreError):
    """A scope, session or item does not exist."""


class ModelError(MemstoreError):
    """An embedding or chat model is missing, unreadable or the wrong kind."""


class ModelMismatchError(ModelError):
    """The store's vectors were made by a different embedding model."""


class AnswerError(MemstoreError):
    """The answering model could not be reached or gave an unusable reply."""
