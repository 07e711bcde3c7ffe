"""The few statements whose SQL differs between SQLite, PostgreSQL, MySQL.

Idempotency and "newest wins" are decided by the database inside one
statement (``ON CONFLICT`` / ``ON DUPLICATE KEY``), so two collectors
writing the same or competing reports cannot both win, with no lock in
Python. SQLite and PostgreSQL share the ``ON CONFLICT`` form and support
``RETURNING``; MySQL has neither, so its paths ask with a follow-up query.
"""

import io

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

_ON_CONFLICT = {'postgresql': postgresql.insert, 'sqlite': sqlite.insert}


def insert_rows(conn, table, names, rows):
    """Plain INSERT of many rows (tuples in the order of ``names``).

    On PostgreSQL with psycopg2 the rows go through COPY: the instance
    samples are most of what the collector writes (40 rows per report of a
    busy host), and PostgreSQL takes them several times faster through
    COPY than through multi-row INSERT statements, in the same
    transaction. The COPY text is built a column at a time, each column
    with the one conversion its type needs.
    """
    if not rows:
        return
    if (conn.dialect.name != 'postgresql'
            or conn.dialect.driver != 'psycopg2'):
        conn.execute(sa.insert(table), [dict(zip(names, row))
                                        for row in rows])
        return
    columns = [_copy_column(table.c[name], values)
               for name, values in zip(names, zip(*rows))]
    text = '\n'.join(map('\t'.join, zip(*columns))) + '\n'
    cursor = conn.connection.driver_connection.cursor()
    try:
        cursor.copy_expert('COPY %s (%s) FROM STDIN' % (
            table.name, ', '.join(names)), io.StringIO(text))
    finally:
        cursor.close()


#: COPY's text format: tab-separated, NULL is \N, and backslash, tab,
#: newline and carriage return inside a value are backslash escapes.
_COPY_NULL = '\\N'
_COPY_ESCAPES = str.maketrans({'\\': '\\\\', '\t': '\\t', '\n': '\\n',
                               '\r': '\\r'})


def _copy_text(value):
    if '\\' in value or not value.isprintable():
        return value.translate(_COPY_ESCAPES)
    return value


def _copy_column(column, values):
    """One column's values as COPY text fields."""
    kind = column.type.python_type
    if kind is str:
        return [_COPY_NULL if v is None else _copy_text(v) for v in values]
    if kind is bool:
        return [_COPY_NULL if v is None else ('t' if v else 'f')
                for v in values]
    # repr is the shortest text that reads back as the same float.
    return [_COPY_NULL if v is None else repr(v) for v in values]


_STATEMENTS = {}


def _cached(key, build):
    """The statement ``build()`` makes, built once per ``key``.

    Run with a list of parameter dicts, a cached INSERT goes through
    SQLAlchemy's "insertmanyvalues" batching, compiled once; an INSERT
    with ``.values(rows)`` was compiled anew for every batch, with a bound
    parameter per value, which cost as much CPU as the database's work.
    """
    stmt = _STATEMENTS.get(key)
    if stmt is None:
        stmt = _STATEMENTS[key] = build()
    return stmt


def insert_new_reports(conn, table, rows):
    """Insert rows whose (host, timestamp) is not stored yet.

    Return {(host, timestamp): id} of the rows this call inserted.
    """
    name = conn.dialect.name
    if name in _ON_CONFLICT:
        stmt = _cached(('new_reports', name, table), lambda: _ON_CONFLICT[
            name](table).on_conflict_do_nothing(
            index_elements=['host', 'timestamp']).returning(
            table.c.id, table.c.host, table.c.timestamp))
        return {(r.host, r.timestamp): r.id for r in conn.execute(stmt, rows)}
    inserted = {}
    for row in rows:
        result = conn.execute(
            mysql.insert(table).prefix_with('IGNORE').values(row))
        if result.rowcount == 1:
            inserted[(row['host'], row['timestamp'])] = (
                result.inserted_primary_key[0])
    return inserted


def insert_missing(conn, table, rows, key):
    """Insert the rows whose primary key ``key`` is not stored yet."""
    if not rows:
        return
    name = conn.dialect.name
    if name in _ON_CONFLICT:
        conn.execute(_ON_CONFLICT[name](table).values(
            rows).on_conflict_do_nothing(index_elements=[key]))
    else:
        conn.execute(mysql.insert(table).prefix_with('IGNORE').values(rows))


def upsert_newer(conn, table, rows):
    """Insert or replace each host's row unless the stored one is newer.

    ``rows`` have one entry per host. Return the hosts whose row now holds
    the given timestamp (inserted or replaced).
    """
    name = conn.dialect.name
    if name in _ON_CONFLICT:
        columns = tuple(rows[0])

        def build():
            stmt = _ON_CONFLICT[name](table)
            return stmt.on_conflict_do_update(
                index_elements=['host'],
                set_={c: stmt.excluded[c] for c in columns if c != 'host'},
                where=table.c.timestamp < stmt.excluded.timestamp,
            ).returning(table.c.host)
        stmt = _cached(('newer', name, table, columns), build)
        return {r.host for r in conn.execute(stmt, rows)}
    stmt = mysql.insert(table).values(rows)
    newer = stmt.inserted.timestamp > table.c.timestamp
    # MySQL assigns left to right: timestamp must be replaced last, after
    # the columns whose condition reads it.
    stmt = stmt.on_duplicate_key_update([
        (c, sa.case((newer, stmt.inserted[c]), else_=table.c[c]))
        for c in rows[0] if c not in ('host', 'timestamp')] + [
        ('timestamp', sa.func.greatest(table.c.timestamp,
                                       stmt.inserted.timestamp)),
    ])
    conn.execute(stmt)
    wanted = {row['host']: row['timestamp'] for row in rows}
    stored = conn.execute(sa.select(table.c.host, table.c.timestamp).where(
        table.c.host.in_(list(wanted))))
    return {r.host for r in stored if r.timestamp == wanted[r.host]}


def add_to_counters(conn, table, increments):
    """Atomically add ``{name: n}`` to the counters, creating missing ones."""
    if not increments:
        return
    rows = [{'name': k, 'value': v} for k, v in sorted(increments.items())]
    name = conn.dialect.name
    if name in _ON_CONFLICT:
        stmt = _ON_CONFLICT[name](table).values(rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=['name'],
            set_={'value': table.c.value + stmt.excluded.value})
    else:
        stmt = mysql.insert(table).values(rows)
        stmt = stmt.on_duplicate_key_update(
            value=table.c.value + stmt.inserted.value)
    conn.execute(stmt)


PROFILE_METRICS = ('mpki', 'mf', 'ipc', 'mf_small_llc')
_PROFILE_STATEMENTS = {}


def update_profiles(conn, table, rows, keys=('image_id',)):
    """Fold one batch into images' exponentially weighted means.

    Each row holds what a new profile would hold (image_id, the means,
    merlin_class, samples, updated_at) plus ``decay_<m>`` and ``add_<m>``
    per metric. For an existing profile each mean becomes
    ``old * decay + add`` (the closed form of applying the batch's samples
    one by one), or the new value where the old one was unknown; samples
    add up; the Merlin class is the latest known. Atomic per row, so two
    collectors updating one image both count.

    ``keys`` are the table's primary key columns (the image, or the image
    and the host). One statement, compiled once per dialect and table and
    run for every row.
    """
    if not rows:
        return
    name = conn.dialect.name
    stmt = _PROFILE_STATEMENTS.get((name, table.name))
    if stmt is None:
        stmt = _PROFILE_STATEMENTS[(name, table.name)] = _profile_statement(
            name, table, keys)
    conn.execute(stmt, rows)


def _profile_statement(name, table, keys):
    values = {c: sa.bindparam(c) for c in tuple(keys) + (
        'merlin_class', 'samples', 'updated_at') + PROFILE_METRICS}
    if name in _ON_CONFLICT:
        stmt = _ON_CONFLICT[name](table).values(values)
        new = stmt.excluded
    else:
        stmt = mysql.insert(table).values(values)
        new = stmt.inserted
    sets = []
    for metric in PROFILE_METRICS:
        old = table.c[metric]
        sets.append((metric, sa.case(
            (old.is_(None), new[metric]),
            (new[metric].is_(None), old),
            else_=old * sa.bindparam('decay_' + metric, type_=sa.Double())
            + sa.bindparam('add_' + metric, type_=sa.Double()))))
    sets += [('merlin_class', sa.func.coalesce(new.merlin_class,
                                               table.c.merlin_class)),
             ('samples', table.c.samples + new.samples),
             ('updated_at', new.updated_at)]
    if name in _ON_CONFLICT:
        return stmt.on_conflict_do_update(index_elements=list(keys),
                                          set_=dict(sets))
    return stmt.on_duplicate_key_update(sets)


def replace_rows(conn, table, rows, keys):
    """Insert ``rows``, overwriting the rows with the same ``keys``.

    One statement per row set (``ON CONFLICT DO UPDATE`` / ``ON DUPLICATE
    KEY UPDATE``), so two collectors rewriting one row cannot both insert
    it: the second overwrites the first's, where a DELETE then INSERT made
    the second fail on the primary key.
    """
    if not rows:
        return
    names = list(rows[0])
    name = conn.dialect.name
    if name in _ON_CONFLICT:
        stmt = _ON_CONFLICT[name](table)
        stmt = stmt.on_conflict_do_update(
            index_elements=list(keys),
            set_={n: stmt.excluded[n] for n in names if n not in keys})
    else:
        stmt = mysql.insert(table)
        stmt = stmt.on_duplicate_key_update(
            [(n, stmt.inserted[n]) for n in names if n not in keys])
    conn.execute(stmt, rows)
