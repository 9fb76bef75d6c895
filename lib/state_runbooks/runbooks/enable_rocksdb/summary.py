"""The run summary: the plan, what the checkpoint pinned, the verification and the measurement
as the summary's details, and its findings."""
from __future__ import annotations

from state_runbooks.common.redaction import redact_conf

from .benchmark import ProviderMeasurement, benchmark_summary
from .pinned import PinnedReport
from .provider import RocksDBPlan
from .verification import Verification


def summarize(summary, rocksdb_plan: RocksDBPlan, applied: dict, report: PinnedReport | None,
              verification: Verification | None = None,
              measurements: list[ProviderMeasurement] | None = None) -> None:
    """Fill the summary's details and findings."""
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
