"""The database schema, as numbered migrations keyed by ``PRAGMA user_version``.

Migration *n* (1-based) brings a file from version *n - 1* to *n*.  They run
inside one transaction when a file is opened (see :mod:`memstore.db`), so a
file is never left half-migrated.  Append new migrations; never edit one that
has shipped.

The schema avoids ``STRICT`` tables and custom tokenizers on purpose: the file
must stay readable, and its full-text index searchable, from a stock
``sqlite3`` shell.  The vector table (``items_vec``) is not created here
because its dimension is only known once an embedding model is chosen; see
:mod:`memstore.vectors`.
"""

from __future__ import annotations

#: Marks a SQLite file as memstore's (``PRAGMA application_id``): "MEMS".
APPLICATION_ID = 0x4D454D53

#: The FTS5 tokenizer.  Built in, so the stock shell can MATCH the index;
#: porter stemming measurably helps recall on conversational text.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_V1 = f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE scopes (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE sessions (
    id         INTEGER PRIMARY KEY,
    scope_id   INTEGER NOT NULL REFERENCES scopes(id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    started_at TEXT NOT NULL,          -- ISO-8601, YYYY-MM-DDTHH:MM:SS
    title      TEXT,
    meta       TEXT,                   -- a JSON object, or NULL
    digest     TEXT NOT NULL,          -- sha256 of the session as imported; lets a re-import skip unchanged sessions
    UNIQUE (scope_id, key)
);
CREATE INDEX sessions_scope_started ON sessions(scope_id, started_at);

CREATE TABLE items (
    id           INTEGER PRIMARY KEY,
    session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    -- Copied from the session so that FTS5 and vec0 can filter by scope
    -- without a join.
    scope_id     INTEGER NOT NULL,
    seq          INTEGER NOT NULL,     -- the turn's 0-based index in its session
    role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'document')),
    author       TEXT,
    at           TEXT NOT NULL,        -- ISO-8601, YYYY-MM-DDTHH:MM:SS
    content      TEXT NOT NULL,
    content_hash TEXT NOT NULL,        -- sha256 of content, hex
    UNIQUE (session_id, seq)
);
CREATE INDEX items_scope_at ON items(scope_id, at);
CREATE INDEX items_scope_author ON items(scope_id, lower(author)) WHERE author IS NOT NULL;

CREATE TABLE item_tags (
    item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
    tag     TEXT NOT NULL,             -- lower-cased
    PRIMARY KEY (item_id, tag)
) WITHOUT ROWID;
CREATE INDEX item_tags_tag ON item_tags(tag);

-- scope_id is indexed so that a query can say `scope_id : "7" AND content : (...)`
-- and let FTS5 intersect posting lists instead of scoring every scope.
CREATE VIRTUAL TABLE items_fts USING fts5(
    content, scope_id,
    content = 'items', content_rowid = 'id',
    tokenize = '{FTS_TOKENIZER}'
);
CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts(rowid, content, scope_id) VALUES (new.id, new.content, new.scope_id);
END;
CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, content, scope_id)
        VALUES ('delete', old.id, old.content, old.scope_id);
END;
CREATE TRIGGER items_fts_update AFTER UPDATE OF content, scope_id ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, content, scope_id)
        VALUES ('delete', old.id, old.content, old.scope_id);
    INSERT INTO items_fts(rowid, content, scope_id) VALUES (new.id, new.content, new.scope_id);
END;

-- Embeddings, keyed by the hash of the exact text given to the model (prompt
-- included) and the model's fingerprint: identical text is embedded once,
-- across sessions, scopes and re-imports.
CREATE TABLE embeddings (
    text_hash   TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    vector      BLOB NOT NULL,         -- float32, little-endian, L2-normalised
    PRIMARY KEY (text_hash, fingerprint)
) WITHOUT ROWID;

-- For people at the sqlite3 shell.
CREATE VIEW user_log AS
    SELECT sc.name AS scope, se.key AS session, se.started_at AS session_date,
           i.seq AS turn, i.at AS at, i.content AS content
    FROM items i
    JOIN sessions se ON se.id = i.session_id
    JOIN scopes sc ON sc.id = i.scope_id
    WHERE i.role = 'user'
    ORDER BY sc.name, se.started_at, se.key, i.seq;

CREATE VIEW timeline AS
    SELECT sc.name AS scope, se.key AS session, se.started_at AS session_date,
           i.seq AS turn, i.role AS role, i.author AS author, i.at AS at,
           i.content AS content,
           (SELECT group_concat(t.tag, ',') FROM item_tags t WHERE t.item_id = i.id) AS tags
    FROM items i
    JOIN sessions se ON se.id = i.session_id
    JOIN scopes sc ON sc.id = i.scope_id
    ORDER BY sc.name, i.at, se.started_at, se.key, i.seq;
"""

# FTS5 rows written by a per-row trigger cost a statement each inside FTS5;
# one INSERT ... SELECT per session is 1.6x faster for the whole import.  So
# memstore's own writes set 'fts.deferred' in meta for the length of their
# transaction (it is never committed) and index each session in one
# statement; an INSERT from anywhere else (the sqlite3 shell) still fires.
_V2 = """
DROP TRIGGER items_fts_insert;
CREATE TRIGGER items_fts_insert AFTER INSERT ON items
WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'fts.deferred')
BEGIN
    INSERT INTO items_fts(rowid, content, scope_id) VALUES (new.id, new.content, new.scope_id);
END;
"""

#: The migrations, in order.  ``MIGRATIONS[n - 1]`` produces version ``n``.
MIGRATIONS: tuple[str, ...] = (_V1, _V2)

#: The schema version this code writes.
SCHEMA_VERSION = len(MIGRATIONS)
