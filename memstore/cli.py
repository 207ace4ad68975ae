"""The ``memstore`` command line.

Each command parses its arguments, calls one library function and formats
the result; ``--json`` wherever the output may be piped.  No SQL here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from .errors import MemstoreError

DEFAULT_DB = "memstore.db"


# -- plumbing --------------------------------------------------------------


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"memstore: error: {message}", err=True)
    sys.exit(code)


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def db_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--db PATH`` on every command (and on the group), defaulting to $MEMSTORE_DB."""
    return click.option(
        "--db",
        "db_path",
        envvar="MEMSTORE_DB",
        default=None,
        metavar="PATH",
        help=f"The memstore database file [env MEMSTORE_DB; default ./{DEFAULT_DB}].",
    )(f)


def model_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--model",
        default=None,
        metavar="PATH",
        help="A GGUF embedding model [env MEMSTORE_MODEL; default: the store's model, then the cache].",
    )(f)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(f)


def _db_path(db_path: str | None) -> str:
    ctx = click.get_current_context()
    root = ctx.find_root().params.get("db_path")
    return db_path or root or DEFAULT_DB


def open_db(db_path: str | None, *, create: bool = False, model: str | None = None) -> Any:
    from .store import open_store

    return open_store(_db_path(db_path), create=create, model=model)


def print_notices(store: Any, as_json: bool) -> list[str]:
    """Tell the user what the store noticed (once); in JSON mode they go into the output instead."""
    if not as_json:
        for message in store.notices:
            click.echo(f"memstore: note: {message}", err=True)
    return list(store.notices)


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class MemstoreGroup(click.Group):
    """Prints every error as one line, ``memstore: error: …``, never a traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except MemstoreError as exc:
            fail(str(exc), exc.exit_code)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            fail("interrupted", 130)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted; nothing half-written was kept", 130)
        except BrokenPipeError:
            sys.exit(0)
        except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("MEMSTORE_DEBUG"):
                raise
            fail(f"unexpected {type(exc).__name__}: {exc} (set MEMSTORE_DEBUG=1 for a traceback)")


@click.group(cls=MemstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@db_option
@click.version_option(package_name="memstore")
def cli(db_path: str | None) -> None:
    """Long-term memory for chat assistants, in one SQLite file."""


# -- store -----------------------------------------------------------------


@cli.command()
@db_option
def init(db_path: str | None) -> None:
    """Create an empty memstore database (or check an existing one)."""
    with open_db(db_path, create=True) as store:
        click.echo(f"memstore database ready at {store.path}")


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=True, path_type=str))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "longmemeval"]), default=None, help="Default: detected.")
@click.option("--embed", "embed_after", is_flag=True, help="Embed the new items right after importing.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@db_option
@model_option
@json_option
def import_(
    file: str, fmt: str | None, embed_after: bool, quiet: bool, db_path: str | None, model: str | None, as_json: bool
) -> None:
    """Import memstore JSONL or LongMemEval JSON (.json, .gz, .xz), all or nothing."""
    from .progress import progress_bar

    with open_db(db_path, create=True, model=model) as store:
        with progress_bar("importing", unit="session", enabled=not (quiet or as_json)) as bar:
            report = store.import_file(file, fmt=fmt, progress=bar)
        out: dict[str, Any] = {"import": report.to_json()}
        if embed_after:
            if store.embedder() is None:
                store.notice("no embedding model found, so nothing was embedded (run `memstore model pull`)")
            else:
                out["embed"] = _run_embed(store, quiet or as_json, scope=None, roles=None, force=False, batch=64)
        notices = print_notices(store, as_json)
    if as_json:
        emit_json({**out, "notices": notices})
        return
    r = report
    click.echo(
        f"imported {r.path}: {r.sessions_added} sessions added, {r.sessions_replaced} replaced, "
        f"{r.sessions_unchanged} unchanged; {r.items} items in {r.scopes} scopes"
        + (f"; skipped {r.skipped_empty} empty turns" if r.skipped_empty else "")
    )
    if "embed" in out:
        _print_embed(out["embed"])


@cli.command()
@click.option("--scope", default=None, help="Only this scope.")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="Default: stdout.")
@db_option
def export(scope: str | None, output: Any, db_path: str | None) -> None:
    """Export sessions as memstore JSONL."""
    with open_db(db_path) as store:
        store.export(output, scope=scope)


@cli.command()
@db_option
@json_option
def scopes(db_path: str | None, as_json: bool) -> None:
    """List the scopes."""
    with open_db(db_path) as store:
        rows = store.scopes()
    if as_json:
        emit_json([r.__dict__ for r in rows])
        return
    for r in rows:
        click.echo(f"{r.name}\t{r.sessions} sessions\t{r.items} items\t{r.first or '-'} … {r.last or '-'}")


@cli.command()
@click.option("--scope", required=True)
@db_option
@json_option
def sessions(scope: str, db_path: str | None, as_json: bool) -> None:
    """List a scope's sessions, oldest first."""
    with open_db(db_path) as store:
        rows = store.sessions(scope)
    if as_json:
        emit_json([{"session": s.key, "date": s.started_at, "title": s.title, "items": s.n_items} for s in rows])
        return
    for s in rows:
        click.echo(f"{s.key}\t{s.started_at}\t{s.n_items} items" + (f"\t{s.title}" if s.title else ""))


@cli.command()
@click.argument("session")
@click.option("--scope", required=True)
@db_option
@json_option
def show(session: str, scope: str, db_path: str | None, as_json: bool) -> None:
    """Show one session, turn by turn."""
    with open_db(db_path) as store:
        s = store.session(scope, session)
    if as_json:
        emit_json(
            {
                "scope": s.scope,
                "session": s.key,
                "date": s.started_at,
                "title": s.title,
                "meta": s.meta,
                "items": [
                    {**i.ref.to_json(), "role": i.role, "author": i.author, "at": i.at, "tags": list(i.tags),
                     "content": i.content}
                    for i in s.items
                ],
            }
        )
        return
    click.echo(f"# {s.key} ({s.scope}) {s.started_at}" + (f" — {s.title}" if s.title else ""))
    for i in s.items:
        who = i.role + (f" ({i.author})" if i.author else "")
        tags = f" [{', '.join(i.tags)}]" if i.tags else ""
        click.echo(f"\n[{i.turn}] {who}{tags}:\n{i.content}")


@cli.command()
@db_option
@json_option
def stats(db_path: str | None, as_json: bool) -> None:
    """Counts and sizes."""
    with open_db(db_path) as store:
        s = store.stats()
    if as_json:
        emit_json(s.to_json())
        return
    roles = ", ".join(f"{n} {r}" for r, n in s.items_by_role.items())
    click.echo(f"{s.path}: {s.file_bytes:,} bytes, schema v{s.schema_version}")
    click.echo(f"{s.scopes} scopes, {s.sessions} sessions, {s.items} items ({roles or 'none'})")
    click.echo(f"{s.text_bytes:,} bytes of text; {s.embedded_items} items embedded"
               + (f" with {s.embedding_model}" if s.embedding_model else ""))


# -- search ----------------------------------------------------------------


def _search_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        [
            click.option("--scope", required=True, help="The scope to search."),
            click.option("--as-of", default=None, metavar="DATE", help="Only items dated at or before DATE."),
            click.option("--after", default=None, metavar="DATE", help="Only items dated after DATE."),
            click.option("--role", "roles", multiple=True,
                         type=click.Choice(["user", "assistant", "system", "document"]), help="Repeatable."),
            click.option("--mode", type=click.Choice(["bm25", "vector", "fused"]), default="fused"),
            click.option("--weights", default=None, metavar="LEX,TAG,VEC", help="RRF weights."),
            click.option("--candidates", type=int, default=None, metavar="C", help="Candidates per leg."),
            click.option("--conjunctive", is_flag=True, help="BM25 needs every term (default: any)."),
            click.option("--latest-slots", type=int, default=3, metavar="R", help="Slots for the latest-dated."),
            click.option("--no-adaptive", is_flag=True, help="Keep the weights as given for requests for advice."),
            click.option("--no-feedback", is_flag=True, help="One pass of the legs (no pseudo-relevance feedback)."),
        ]
    ):
        f = opt(f)
    return f


def _options(k: int, mode: str, weights: str | None, candidates: int | None, conjunctive: bool,
             latest_slots: int, roles: tuple[str, ...], as_of: str | None, after: str | None,
             no_adaptive: bool, no_feedback: bool) -> Any:
    from .retrieve import DEFAULT_CANDIDATES, DEFAULT_WEIGHTS, SearchOptions, Weights

    return SearchOptions(
        k=k,
        mode=mode,
        weights=Weights.parse(weights) if weights else DEFAULT_WEIGHTS,
        candidates=candidates if candidates is not None else DEFAULT_CANDIDATES,
        conjunctive=conjunctive,
        latest_slots=latest_slots,
        roles=tuple(roles) or None,
        as_of=as_of,
        after=after,
        adaptive=not no_adaptive,
        feedback=not no_feedback,
    )


@cli.command()
@click.argument("query")
@_search_options
@click.option("-k", "k", type=int, default=10, help="How many results.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and contribution.")
@db_option
@model_option
@json_option
def search(query: str, scope: str, as_of: str | None, after: str | None, roles: tuple[str, ...], mode: str,
           weights: str | None, candidates: int | None, conjunctive: bool, latest_slots: int, no_adaptive: bool,
           no_feedback: bool, k: int, explain: bool, db_path: str | None, model: str | None, as_json: bool) -> None:
    """Search one scope: BM25, vector and tag legs fused by weighted RRF."""
    opts = _options(k, mode, weights, candidates, conjunctive, latest_slots, roles, as_of, after, no_adaptive,
                    no_feedback)
    with open_db(db_path, model=model) as store:
        hits = store.search(query, scope=scope, options=opts)
        notices = print_notices(store, as_json)
    if as_json:
        out = {"query": query, "scope": scope, "notices": notices,
               "hits": [h.to_json(explain=explain) for h in hits]}
        if explain:
            out["feedback"] = hits.feedback_json()
        emit_json(out)
        return
    if not hits:
        click.echo("no matches")
    if explain and hits.feedback_from:
        sources = ", ".join(f"{r.session}#{r.turn}" for r in hits.feedback_from)
        click.echo(f"feedback: second pass from {sources}; BM25 also searched: {' '.join(hits.feedback_words)}")
    for n, h in enumerate(hits, start=1):
        it = h.item
        slot = "  [latest]" if h.slot == "latest" else ""
        who = it.role + (f" ({it.author})" if it.author else "")
        click.echo(f"{n:>2}. {it.at[:10]}  {it.session}#{it.turn}  {who}  score {h.score:.4f}{slot}")
        if explain:
            legs = ", ".join(f"{leg} #{lr.rank} +{lr.contribution:.4f}" for leg, lr in h.legs.items())
            click.echo(f"    legs: {legs or 'none (latest-dated slot)'}")
        click.echo(f"    {_one_line(it.content)}")


@cli.command()
@click.argument("question")
@click.option("--scope", required=True)
@click.option("--as-of", default=None, metavar="DATE", help="Only what was known at DATE.")
@click.option("-k", "k", type=int, default=50, help="How many records.")
@db_option
@model_option
@json_option
def recall(question: str, scope: str, as_of: str | None, k: int, db_path: str | None, model: str | None,
           as_json: bool) -> None:
    """The top-k records for a question, dated and attributed, oldest first (the Mem++ view)."""
    from .records import build_records

    with open_db(db_path, model=model) as store:
        view = build_records(store, question, scope=scope, as_of=as_of, k=k)
        notices = print_notices(store, as_json)
    if as_json:
        emit_json({**view.to_json(), "notices": notices})
        return
    click.echo(view.text)


# -- memory texts ----------------------------------------------------------


def _print_view(view: Any, as_json: bool, notices: list[str]) -> None:
    if as_json:
        emit_json({**view.to_json(), "notices": notices})
    else:
        click.echo(view.text, nl=not view.text.endswith("\n"))


@cli.command()
@click.argument("question")
@click.option("--scope", required=True)
@click.option("--date", "date", required=True, metavar="DATE", help="When the question is asked.")
@click.option("--budget", type=int, default=180_000, show_default=True, help="Bytes for the whole text.")
@click.option("--reply-budget", type=int, default=96_000, show_default=True, help="Bytes for assistant replies.")
@click.option("--mode", type=click.Choice(["bm25", "vector", "fused"]), default="fused")
@db_option
@model_option
@json_option
def memory(question: str, scope: str, date: str, budget: int, reply_budget: int, mode: str, db_path: str | None,
           model: str | None, as_json: bool) -> None:
    """The memory text for a question: every user message, then the best assistant replies."""
    with open_db(db_path, model=model) as store:
        view = store.memory(question, scope=scope, date=date, budget=budget, reply_budget=reply_budget, mode=mode)
        notices = print_notices(store, as_json)
    _print_view(view, as_json, notices)


@cli.command("sessions-view")
@click.argument("question")
@click.option("--scope", required=True)
@click.option("--date", "date", required=True, metavar="DATE", help="When the question is asked.")
@click.option("--budget", type=int, default=100_000, show_default=True, help="Bytes.")
@click.option("--mode", type=click.Choice(["bm25", "vector", "fused"]), default="fused")
@db_option
@model_option
@json_option
def sessions_view(question: str, scope: str, date: str, budget: int, mode: str, db_path: str | None,
                  model: str | None, as_json: bool) -> None:
    """Whole sessions, verbatim, chosen for a second read of a question."""
    with open_db(db_path, model=model) as store:
        view = store.sessions_view(question, scope=scope, date=date, budget=budget, mode=mode)
        notices = print_notices(store, as_json)
    _print_view(view, as_json, notices)


@cli.command()
@click.argument("question")
@click.option("--scope", required=True)
@click.option("--date", "date", default=None, metavar="DATE", help="When the question is asked.")
@click.option("--mode", type=click.Choice(["bm25", "vector", "fused"]), default="bm25", show_default=True)
@db_option
@model_option
@json_option
def baseline(question: str, scope: str, date: str | None, mode: str, db_path: str | None, model: str | None,
             as_json: bool) -> None:
    """The comparison memory: the top 100 turns of one ranking, within 96,000 bytes."""
    from .memory import build_baseline

    with open_db(db_path, model=model) as store:
        view = build_baseline(store, question, scope=scope, date=date, mode=mode)
        notices = print_notices(store, as_json)
    _print_view(view, as_json, notices)


# -- answering ---------------------------------------------------------------


@cli.command()
@click.argument("question")
@click.option("--scope", required=True)
@click.option("--date", "date", required=True, metavar="DATE", help="When the question is asked.")
@click.option("--budget", type=int, default=180_000, show_default=True, help="Bytes of memory text.")
@click.option("--base-url", default=None, metavar="URL",
              help="An OpenAI-compatible endpoint [env MEMSTORE_ANSWER_BASE_URL; default: OpenAI].")
@click.option("--model-name", default=None, metavar="NAME", help="The chat model [env MEMSTORE_ANSWER_MODEL].")
@click.option("--local-model", default=None, metavar="PATH", help="Answer offline with this GGUF chat model.")
@click.option("--max-tokens", type=int, default=4096, show_default=True,
              help="Room for each answer (reasoning models think inside it).")
@click.option("--no-rules", is_flag=True, help="Only the first read; no second read.")
@click.option("--trace", is_flag=True, help="Show the rules that fired and each call's tokens (on stderr).")
@db_option
@model_option
@json_option
def ask(question: str, scope: str, date: str, budget: int, base_url: str | None, model_name: str | None,
        local_model: str | None, max_tokens: int, no_rules: bool, trace: bool, db_path: str | None,
        model: str | None, as_json: bool) -> None:
    """Answer a question from the memory with a chat model (the API key comes from MEMSTORE_ANSWER_API_KEY)."""
    from .answer import answer, make_backend

    backend = make_backend(base_url=base_url, model=model_name, local_model=local_model)
    try:
        with open_db(db_path, model=model) as store:
            result = answer(store, question, scope=scope, date=date, backend=backend, budget=budget,
                            rules=not no_rules, max_tokens=max_tokens)
            notices = print_notices(store, as_json)
    finally:
        backend.close()
    if as_json:
        emit_json({**result.to_json(), "notices": notices})
    else:
        click.echo(result.text)
    if trace:
        _print_trace(result)


def _print_trace(result: Any) -> None:
    err = click.get_text_stream("stderr")
    fired = ", ".join(result.rules_fired) or "none"
    click.echo(f"trace: memory {result.memory_bytes:,} bytes; rules fired: {fired}", file=err)
    for c in result.calls:
        click.echo(f"  {c.purpose:<10} {c.model}  {c.view} {c.view_bytes:,} B  {c.prompt_tokens:,} in  "
                   f"{c.completion_tokens:,} out  {c.seconds:.1f} s", file=err)
    click.echo(f"  {'total':<10} {len(result.calls)} calls  {result.prompt_tokens:,} in  "
               f"{result.completion_tokens:,} out", file=err)
    for note in result.notes:
        click.echo(f"  note: {note}", file=err)


# -- embeddings ------------------------------------------------------------


def _run_embed(store: Any, quiet: bool, **kwargs: Any) -> dict[str, Any]:
    from .progress import progress_bar

    with progress_bar("embedding", unit="item", enabled=not quiet) as bar:
        def on_progress(p: Any) -> None:
            if bar is not None:
                bar(p.done, p.total, f"{p.tokens_per_second:,.0f} tok/s, {p.cached} cached")

        report = store.embed(progress=on_progress, **kwargs)
    return report.to_json()


def _print_embed(r: dict[str, Any]) -> None:
    rate = f", {r['tokens_per_second']:,.0f} tokens/s" if r.get("tokens_per_second") else ""
    click.echo(
        f"embedded {r['items']} items with {r['model']} ({r['dim']} dims): {r['computed']} computed, "
        f"{r['cached']} from the cache{rate}" + (f"; repaired {r['repaired']} bad cache rows" if r["repaired"] else "")
    )


@cli.command()
@click.option("--scope", default=None, help="Only this scope.")
@click.option("--role", "roles", multiple=True, type=click.Choice(["user", "assistant", "system", "document"]))
@click.option("--force", is_flag=True, help="Re-embed everything with the current model.")
@click.option("--batch", type=int, default=64, show_default=True, help="Items per committed batch.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@db_option
@model_option
@json_option
def embed(scope: str | None, roles: tuple[str, ...], force: bool, batch: int, quiet: bool, db_path: str | None,
          model: str | None, as_json: bool) -> None:
    """Embed the items that have no vector yet (resumable)."""
    with open_db(db_path, model=model) as store:
        report = _run_embed(store, quiet or as_json, scope=scope, roles=roles or None, force=force, batch=batch)
    if as_json:
        emit_json(report)
    else:
        _print_embed(report)


@cli.group()
def model() -> None:
    """Get and inspect the embedding model."""


@model.command("pull")
@click.option("-q", "--quiet", is_flag=True)
@json_option
def model_pull(quiet: bool, as_json: bool) -> None:
    """Download EmbeddingGemma-300M (GGUF, Q8_0) into the user cache and verify it."""
    from .download import DEFAULT_MODEL, pull
    from .progress import progress_bar

    with progress_bar("downloading", unit="B", enabled=not (quiet or as_json)) as bar:
        path = pull(DEFAULT_MODEL, progress=bar)
    if as_json:
        emit_json({"path": str(path), "sha256": DEFAULT_MODEL.sha256, "size": DEFAULT_MODEL.size})
    else:
        click.echo(str(path))


@model.command("path")
@db_option
@model_option
def model_path(db_path: str | None, model: str | None) -> None:
    """Print the path of the model memstore would use."""
    from .download import default_model_path, resolve_model_path

    stored = _stored_model_path(db_path)
    path = resolve_model_path(model, stored)
    if path is None:
        fail(f"no embedding model at {default_model_path()}; run `memstore model pull` or pass --model PATH")
    click.echo(str(path))


def _stored_model_path(db_path: str | None) -> str | None:
    path = _db_path(db_path)
    if not os.path.exists(path):
        return None
    with open_db(db_path) as store:
        return store.stored_model_path()


@model.command("info")
@db_option
@model_option
@json_option
def model_info(db_path: str | None, model: str | None, as_json: bool) -> None:
    """Describe the model memstore would use (read from the GGUF, without loading it)."""
    from .download import default_model_path, resolve_model_path
    from .embed import read_model_info

    path = resolve_model_path(model, _stored_model_path(db_path))
    if path is None:
        fail(f"no embedding model at {default_model_path()}; run `memstore model pull` or pass --model PATH")
    info = read_model_info(path)
    data = {k: (str(v) if k == "path" else v) for k, v in info.__dict__.items()}
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        click.echo(f"{key}: {value}")


def main() -> None:
    """Entry point of the ``memstore`` console script."""
    cli(prog_name="memstore")
