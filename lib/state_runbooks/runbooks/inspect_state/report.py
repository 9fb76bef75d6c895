"""The inspect-state runbook's tables and sentences for the notebook: operators, units, figures
per unit, units not read, hot keys, expiry; and the run summary."""
from __future__ import annotations

from state_runbooks.common.formatting import format_bytes, format_utc, id_ranges
from state_runbooks.common.spark_settings import ENCODING_CONF
from state_runbooks.core.checkpoint import Checkpoint
from state_runbooks.core.growth import growth_verdicts
from state_runbooks.core.operators import operator_model, state_units
from state_runbooks.core.state_files import files_seen
from state_runbooks.core.state_loads import LOAD_FAILURE_MEANING, load_failure_kind
from state_runbooks.core.store_scan import MULTI_ROW_STORE_SUFFIX, StoreReport

from state_runbooks.running.checklist import Inspection
from .demo import DemoResult


def operators_table(ckpt: Checkpoint):
    """One row per store as the operator metadata lists it."""
    import pandas as pd
    return pd.DataFrame([{"operator_id": s.operator_id, "operator": s.operator_name,
                          "store": s.store_name, "partitions": s.num_partitions,
                          "min_batch_id": s.min_batch_id, "max_batch_id": s.max_batch_id}
                         for s in ckpt.stores()])


# Before the state is read only the operator's rule is known: whether the key holds event time
# (and the watermark can evict it) is found by the scan, and said by expiry_lines.
_EXPIRY_IN_TABLE = {"watermark_key": "watermark, if the key holds event time"}


def units_table(ckpt: Checkpoint, operator_id: int = -1):
    """One row per unit Spark's reader reads: what it is, how it is read, how its rows go."""
    import pandas as pd
    return pd.DataFrame([{"unit": u.label, "kind": u.kind,
                          "read_with": ", ".join(f"{k}={v}" for k, v in u.options.items()),
                          "partitions_with_state": id_ranges(list(u.partitions_with_state)),
                          "expires_by": _EXPIRY_IN_TABLE.get(u.expiry.rule, u.expiry.rule)
                          + (" (TTL)" if u.ttl else "")}
                         for u in state_units(ckpt, operator_id)])


def operator_lines(ckpt: Checkpoint, operator_id: int = -1) -> list[str]:
    """Per operator: its family, and what the runbooks note about its layout."""
    ops = ckpt.operators() if operator_id == -1 else [ckpt.operator(operator_id)]
    lines = []
    for op in ops:
        model = operator_model(ckpt, op.operator_id)
        extra = f", join state format {model.join_state_format}" if model.join_state_format else ""
        extra += f", time mode {model.time_mode}" if model.time_mode else ""
        lines.append(f"operator {op.operator_id}: {op.operator_name} ({model.family}{extra})")
        lines += [f"  {note}" for note in model.notes]
    if ckpt.state_metadata_error:
        lines.append(f"Spark's state-metadata source failed: {ckpt.state_metadata_error}")
    return lines


def stores_table(reports: list[StoreReport]):
    """Figures per unit. Units kept in one store's files (a transformWithState's variables, a
    join in state format 3) share its disk bytes: shown on the first of them only."""
    import pandas as pd
    shown = set()
    rows = []
    for r in reports:
        files = (r.operator_id, r.files_store)
        rows.append({"store": r.label, "operator": r.operator_name, "rows": r.rows,
                     "key_bytes": r.key_bytes, "value_bytes": r.value_bytes,
                     "min_rows": min((r.rows_per_partition[p] for p in r.partitions_with_state
                                      if p < len(r.rows_per_partition)), default=0),
                     "max_rows": max(r.rows_per_partition, default=0),
                     "skew_ratio": r.skew_ratio,
                     "disk_bytes": None if files in shown else r.disk.get("retained_bytes")})
        shown.add(files)
    table = pd.DataFrame(rows)
    if not table.empty:  # integers, with <NA> where the bytes were shown above
        table["disk_bytes"] = table["disk_bytes"].astype("Int64")
    return table


def reader_lines(reports: list[StoreReport], ckpt: Checkpoint) -> list[str]:
    """For each unit Spark's reader did not read: its error and what the files say; and, for
    Avro-encoded state, what its byte figures are."""
    lines = []
    if str(ckpt.pinned_conf.get(ENCODING_CONF, "")).lower() == "avro":
        lines.append(f"This state is Avro-encoded ({ENCODING_CONF}=avro, pinned): its files hold "
                     "Avro bytes, not UnsafeRow; key_bytes and value_bytes are the UnsafeRow "
                     "sizes of the same rows, for comparison with other checkpoints.")
    for r in reports:
        if r.readable:
            continue
        seen = files_seen(ckpt.state_files(r.operator_id, r.files_store))
        what = LOAD_FAILURE_MEANING[load_failure_kind(r.reader_error_class)]
        lines.append(f"{r.label} ({r.operator_name}): not read ({r.reader_error_class or 'error'}: "
                     f"{what}); its files: {seen}")
    return lines


def hot_keys_lines(reports: list[StoreReport]) -> list[str]:
    multi = [r for r in reports if r.store_name.endswith(MULTI_ROW_STORE_SUFFIX)]
    if not multi:
        return ["Hot keys are counted in a stream-stream join's keyWithIndexToValue stores, where "
                "one key holds a row per input row still waiting; there is none here."]
    lines = []
    for r in multi:
        if not r.hot_keys:
            lines.append(f"{r.label}: every key holds one row.")
            continue
        keys = ", ".join(f"{k['key']} ({k['rows']} rows, partition {k['partition_id']})"
                         for k in r.hot_keys)
        lines.append(f"{r.label}: {keys}")
    return lines


def expiry_lines(reports: list[StoreReport]) -> list[str]:
    """One sentence per unit: how its rows go, and how many are due now."""
    return [_expiry_line(r) for r in reports]


def _expiry_line(r: StoreReport) -> str:
    head = f"{r.label} ({r.operator_name})"
    if not r.readable:
        return f"{head}: not read, no expiry figures."
    rule, rows = r.expiry_rule, f"{r.rows:,}"
    if rule == "key_without_event_time":
        return f"{head}: its key has no event-time column; the watermark does not evict on the key."
    if rule in ("watermark_key", "expires_at", "session_end") and r.expiry_column is None:
        return f"{head}: no event-time column found in its state; no expiry figure."
    if rule in ("watermark_key", "expires_at", "session_end"):
        if r.watermark_ms is None:
            return f"{head}: no watermark recorded after batch {r.batch_id}."
        what = {"watermark_key": "rows have", "expires_at": "keys have",
                "session_end": "sessions have"}[rule]
        why = {"watermark_key": "",
               "expires_at": " (each key is kept until the watermark passes its event time plus "
                             "the watermark delay)",
               "session_end": " (a session closes once the watermark passes its end)"}[rule]
        return (f"{head}: {r.rows_due:,} of {rows} {what} {r.expiry_column} <= "
                f"{format_utc(r.watermark_ms)}, the watermark committed after batch {r.batch_id}; the "
                f"next batch evicts them{why}.")
    if rule == "join_side":
        side = r.store_name.split("-", 1)[0]
        return (f"{head}: the watermark evicts the {side} side's rows once no future row of the "
                "other side can match them (their event time plus the join's time bound falls "
                "behind it); 04 diagnose join mismatch shows the bounds and the evicted rows.")
    if rule == "timeout":
        earliest = (f", the earliest at {format_utc(r.earliest_deadline_ms)}"
                    if r.earliest_deadline_ms else "")
        return (f"{head}: {r.rows_with_deadline:,} of {rows} keys have a timeout set "
                f"({r.expiry_column}{earliest}); once the watermark (event-time timeout) or the "
                "clock (processing-time timeout) passes it, Spark calls the function with "
                "hasTimedOut and the function removes the state or keeps it.")
    if rule == "ttl":
        if r.expiry_column is None:
            return f"{head}: TTL enabled, but no TTL column found in its state."
        earliest = (f" the earliest expires at {format_utc(r.earliest_deadline_ms)};"
                    if r.earliest_deadline_ms else "")
        due = (f" {r.rows_due:,} had already expired at batch {r.batch_id}'s time "
               f"{format_utc(r.expiry_threshold_ms)}." if r.rows_due is not None else "")
        return (f"{head}: {r.kind} state with TTL ({r.expiry_column}) on {rows} rows;{earliest} "
                f"Spark drops a row once processing time passes it.{due}")
    if rule == "timer":
        clock = "watermark" if r.expiry_clock == "event_time" else "processing time"
        earliest = (f", the earliest at {format_utc(r.earliest_deadline_ms)}"
                    if r.earliest_deadline_ms else "")
        due = (f"; {r.rows_due:,} were due at batch {r.batch_id}"
               if r.rows_due is not None else "")
        return (f"{head}: {rows} registered timers ({clock}){earliest}{due}; a timer fires once "
                f"the {clock} passes it, and the processor's handleExpiredTimer decides what "
                "state to clear.")
    if rule == "processor":
        return (f"{head}: {r.kind} state without TTL ({rows} rows): kept until the processor "
                "clears it; no clock removes it.")
    if rule == "never":
        return (f"{head}: {rows} row(s), the count of rows the limit let through; it never "
                "expires and does not grow.")
    return f"{head}: an operator the runbooks do not know; no expiry figure."


def summarize(summary, result: Inspection) -> None:
    """Fill the summary: one warning finding per warned checklist item, and the figures (one
    ``stores`` entry per unit, ``state_variable`` set for transformWithState's variables)."""
    reports, checklist = result.reports, result.checklist
    for item in checklist:
        if item.severity == "warning":
            summary.add_finding("warning", item.code, f"{item.details['item']}: {item.message}")
    summary.details.update({
        "batch_id": reports[0].batch_id if reports else None,
        "total_rows": sum(r.rows or 0 for r in reports),
        "stores": [r.summary() for r in reports],
        "checklist": [{"item": i.details["item"], "status": i.details["status"],
                       "evidence": i.message} for i in checklist],
    })


def what_this_showed(result: DemoResult) -> list[str]:
    """The demo's lessons, each with the figures of this run: what the checkpoint holds and what
    the reader read, the balance, how the state grew and levelled off, what the watermark evicts
    next (with the session query's), and the production checklist."""
    reports, growth = result.inspection.reports, result.inspection.growth
    checklist, session_reports = result.inspection.checklist, result.session_reports
    read = [r for r in reports if r.readable]
    lines = []
    if read:
        ops = sorted({(r.operator_id, r.operator_name) for r in reports})
        units = ("one store each" if len(reports) == len(ops) else f"{len(reports)} units")
        counts = sorted({r.num_partitions for r in reports})
        parts = f"{counts[0]} partitions" if len(counts) == 1 else "partitions"
        payload = sum(r.key_bytes + r.value_bytes for r in read)
        lines.append(f"the checkpoint keeps {len(ops)} stateful operator"
                     f"{'s' if len(ops) != 1 else ''} ({', '.join(name for _, name in ops)}), "
                     f"{units} in {parts}; Spark's "
                     f"statestore reader read their {sum(r.rows or 0 for r in read):,} rows at "
                     f"batch {read[0].batch_id}, {format_bytes(payload)} of keys and values")
        worst = max(read, key=lambda r: r.skew_ratio or 0.0)
        if worst.skew_ratio and worst.num_partitions:
            balance = next((i.details["status"] for i in checklist if i.code == "partition_skew"),
                           None)
            verdict = ("too few rows per partition to judge" if not worst.skew_judged else
                       "balanced" if balance == "pass" else
                       "skewed: one task does most of the work")
            lines.append(f"the worst skew ratio, {worst.skew_ratio:.2f} ({worst.label}), is its "
                         f"fullest partition's {max(worst.rows_per_partition):,} rows over the "
                         f"mean {worst.rows / worst.num_partitions:,.4g}: {verdict}")
    if growth is not None and not growth.empty:
        # The checklist's rules (core/growth.py, is_rising and level_from): a flat sample does
        # not end a rise, a rise held at its last samples has levelled off; both say the same of
        # the same rows.
        batches = [int(b) for b in growth.index]
        verdicts = growth_verdicts(growth)
        rising, level, bounded = [], [], []
        for unit, v in verdicts.items():
            if v["only_grew"] and v["level_from"] is not None:
                level.append(f"{unit} {v['first']:,} -> {v['last']:,} rows, level from batch "
                             f"{v['level_from']}")
            elif v["only_grew"]:
                rising.append(f"{unit} {v['first']:,} -> {v['last']:,} rows")
            elif v["peak"] > v["last"]:
                bounded.append(f"{unit} peaked at {v['peak']:,}, {v['last']:,} now")
        span = f"over batches {batches[0]}..{batches[-1]}"
        if rising:
            lines.append(f"{span} the state only grew ({'; '.join(rising)}): a young query "
                         "filling its watermark horizon, or state nothing evicts; the "
                         "checklist says which, and a later run whether it fell")
        if level:
            lines.append(f"{span} the state {'also ' if rising else ''}rose, then held level "
                         f"({'; '.join(level)}): each batch adds as many rows as are evicted, "
                         "or adds none; the checklist says which")
        if bounded:
            lines.append(f"the state fell in some batch ({'; '.join(bounded)}): something "
                         "evicts it, so it is bounded")
    due = [f"{r.rows_due:,} of {r.label}'s {r.rows:,}"
           for r in sorted(read, key=lambda r: -(r.rows_due or 0))
           if r.expiry_clock == "event_time" and r.rows_due is not None]
    sessions = [r for r in session_reports or [] if r.readable and r.expiry_rule == "session_end"]
    if due or sessions:
        text = ("the watermark evicts by event time: " + " and ".join(due)
                + " rows are already behind it, gone in the next batch" if due else "")
        if sessions:
            s = sessions[0]
            text += ("; " if text else "") + (
                f"a session window keeps one row per open session ({s.rows:,} here, "
                f"{f'{s.rows_due:,}' if s.rows_due else 'none'} due) until the watermark "
                "passes its end")
        lines.append(text)
    statuses = [i.details["status"] for i in checklist]
    lines.append(f"the production checklist decided its {len(checklist)} items from the "
                 f"checkpoint's own files and figures: "
                 + ", ".join(f"{statuses.count(s)} {label}" for s, label in
                             (("pass", "passed"), ("warn", "warned"), ("info", "for information"))
                             if statuses.count(s))
                 + ("" if "warn" in statuses else ", no warning"))
    return lines
