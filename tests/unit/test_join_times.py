"""04 says the date its times share once, and then shows times of day only."""
from state_runbooks.runbooks.diagnose_join_mismatch import KeyVerdict, common_day, times_line


def _verdict(*times: str) -> KeyVerdict:
    side = {"times": list(times), "rows_now": 1, "removed_batch": None,
            "removed_at_watermark": None, "matched": False}
    return KeyVerdict("ord-1", "waiting_for_right", {"left": side, "right": {**side, "times": []},
                                                  "watermark": "2023-11-14 22:13:24"})


def test_times_sharing_a_date_are_said_once():
    verdicts = [_verdict("2023-11-14 22:13:20"), _verdict("2023-11-14 22:13:21.250")]
    assert common_day(verdicts) == "2023-11-14"
    assert times_line(verdicts).startswith("Times are UTC, all on 2023-11-14")


def test_times_across_midnight_keep_their_dates():
    verdicts = [_verdict("2023-11-14 23:59:59"), _verdict("2023-11-15 00:00:01")]
    assert common_day(verdicts) is None and times_line(verdicts) == "Times are UTC."


def test_the_counts_plot_is_titled_by_the_history_it_counts_not_one_batch():
    from types import SimpleNamespace

    from state_runbooks.runbooks.diagnose_join_mismatch import counts_lines, counts_title
    diagnosis = SimpleNamespace(history_start=0, batch_id=7, method="change feed", total_keys=166,
                                counts={})
    assert counts_title(diagnosis) == "Join keys per category over batches 0..7 (change feed)"
    assert counts_lines(diagnosis) == [
        "166 join keys in the state history of batches 0..7 (change feed):"]
