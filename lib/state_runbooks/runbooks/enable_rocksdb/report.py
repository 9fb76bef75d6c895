"""What a reader sees: the run summary (the plan, what the checkpoint pinned, the verification and
the measurement as its details, and its findings), and what the demo showed."""
from __future__ import annotations

from dataclasses import dataclass

from state_runbooks.common.formatting import id_ranges
from state_runbooks.common.redaction import redact_conf
from state_runbooks.common.runtime import provider_kind
from state_runbooks.common.spark_settings import CHANGELOG_CONF, PROVIDER_CONF

from .benchmark import benchmark_summary
from .demo import DemoResult
from .pinned import PinnedReport
from .provider import RocksDBPlan


@dataclass
class Enablement:
    """What the run set and found: the plan, the session's values after it was applied, what the
    checkpoint pins, and the demonstrations when they ran."""
    plan: RocksDBPlan
    applied: dict
    report: PinnedReport | None
    demo: DemoResult | None = None


def summarize(summary, result: Enablement) -> None:
    """Fill the summary's details and findings."""
    rocksdb_plan, applied, report = result.plan, result.applied, result.report
    verification = result.demo.verification if result.demo else None
    measurements = result.demo.measurements if result.demo else None
    d = summary.details
    d["runtime"] = rocksdb_plan.runtime
    d["provider_class"] = rocksdb_plan.provider_class
    d["confs"] = redact_conf(applied)
    d["pinned_provider_class"] = report.pinned_provider_class if report else None
    d["pinned_matches"] = report.pinned_matches if report else None
    d["changelog_checkpointing_pinned"] = report.changelog_pinned if report else None
    d["changelog_checkpointing_newest_version"] = (report.changelog_newest_version if report
                                                   else None)
    d["takes_effect"] = report.takes_effect if report else True
    d["rocksdb_verified"] = verification.rocksdb_in_use if verification else None
    d["benchmark"] = benchmark_summary(measurements) if measurements else {}
    if report is not None and report.pinned_class_check is not None \
            and not report.pinned_class_check.ok:
        summary.add_finding("critical", "pinned_provider_unusable",
                            f"{report.pinned_in} pins {report.pinned_provider_class}, which is not "
                            f"usable here ({report.pinned_class_check.reason}): the query cannot "
                            "restart on this checkpoint")
    if report is not None and report.pinned_matches is False:
        summary.add_finding("warning", "pinned_provider_differs",
                            f"checkpoint pinned {report.pinned_provider_class} in "
                            f"{report.pinned_in}; "
                            f"requested {rocksdb_plan.provider_class} will not take effect on it: "
                            "start a new checkpoint to switch, or move this one with 09 "
                            "rewrite state (Spark 4.2+)")
    if verification is not None and not verification.rocksdb_in_use:
        summary.add_finding("critical", "rocksdb_not_in_use",
                            "a demo stream with the requested settings did not run on RocksDB")


_PROVIDERS = {"hdfs": "the HDFS-backed provider", "rocksdb": "RocksDB"}
_FILES = {"delta": (".delta", ".delta files"), "snapshot": (".snapshot", ".snapshot files"),
          "changelog": (".changelog", ".changelog files"),
          "zip": (".zip snapshot", ".zip snapshots")}


def _provider(provider_class: str | None) -> str:
    return _PROVIDERS.get(provider_kind(provider_class), str(provider_class))


def _written(kinds_by_version: dict) -> str:
    """``{2: ["delta"]}`` -> ``state version 2 as a .delta``; ``{1: ["changelog"], 2:
    ["changelog"]}`` -> ``state versions 1..2 as .changelog files``."""
    groups: dict = {}
    for version, kinds in kinds_by_version.items():
        groups.setdefault(tuple(kinds), []).append(int(version))
    parts = []
    for kinds, versions in groups.items():
        one = len(versions) == 1
        files = " and ".join(("a " if one else "") + _FILES.get(k, (k, k))[0 if one else 1]
                             for k in kinds)
        parts.append(f"{id_ranges(sorted(versions))} as {files}")
    plural = len(kinds_by_version) > 1
    return ("state versions " if plural else "state version ") + "; ".join(parts)


def what_this_showed(result: Enablement) -> list[str]:
    """The demo's lessons, each with the figures of this run: what a wrong class name did,
    whether the setting takes effect on the checkpoint and what a restart with it wrote, the
    evidence that RocksDB ran, and what the restart with the changelog flag flipped wrote."""
    report, demo = result.report, result.demo
    wrong, pinned_demo = (demo.wrong, demo.pinned) if demo else (None, None)
    verification, flip = (demo.verification, demo.flip) if demo else (None, None)
    lines = []
    if wrong is not None:
        if wrong.start_error_class and wrong.pinned_after_failure == wrong.wrong_class:
            lines.append(f"the session took {wrong.wrong_class} without a word; the query "
                         f"failed at start ({wrong.start_error_class}), and offsets/0 already "
                         "pinned it: the restart with the right class "
                         + (f"failed too ({wrong.restart_error_class})"
                            if wrong.restart_error_class else "ran"))
        else:
            lines.append(f"the class name {wrong.wrong_class} failed at start with "
                         f"{wrong.start_error_class or 'no error'}, and offsets/0 pinned "
                         f"{wrong.pinned_after_failure or 'nothing'}")
    if report is not None:
        if report.pinned_matches is False:
            text = (f"the demo checkpoint pins {_provider(report.pinned_provider_class)} in "
                    f"{report.pinned_in}, so setting {_provider(report.requested_class)} does "
                    "not switch it")
        elif report.pinned_provider_class is None:
            text = "the checkpoint pins no provider yet: the setting takes effect at its start"
        else:
            text = (f"the checkpoint already pins {_provider(report.pinned_provider_class)} in "
                    f"{report.pinned_in}: the setting is in effect")
        if pinned_demo is not None:
            before = {k for kinds in pinned_demo.kinds_before.values() for k in kinds}
            new = {k for kinds in pinned_demo.new_versions.values() for k in kinds}
            session = _provider(pinned_demo.session_conf.get(PROVIDER_CONF))
            text += (f": restarted with {session} set, a checkpoint like it wrote "
                     f"{_written(pinned_demo.new_versions)}"
                     + (" again" if new and new <= before else ""))
        lines.append(text)
    if verification is not None:
        files = _written(verification.kinds_by_version)
        lines.append(f"a new checkpoint with these settings pinned "
                     f"{_provider(verification.pinned_provider_class)}, wrote {files} and "
                     f"reported {len(verification.rocksdb_metrics)} rocksdb* metrics: "
                     + ("RocksDB is in use" if verification.rocksdb_in_use else
                        "RocksDB is NOT in use"))
    if flip is not None:
        value = flip.session_conf.get(CHANGELOG_CONF)
        pinned = flip.pinned_after.get(CHANGELOG_CONF)
        kinds = {k for ks in flip.new_versions.values() for k in ks}
        follows = ("changelog" in kinds) == (str(value).lower() == "true")
        lines.append(f"restarted with changelog checkpointing {value}, the same RocksDB "
                     f"checkpoint wrote {_written(flip.new_versions)}: the flag is "
                     + ("not pinned" if pinned is None else f"pinned as {pinned}")
                     + (" and follows the session at the next restart" if follows else
                        ", and the next version did NOT follow the session"))
    return lines
