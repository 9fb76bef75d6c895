"""A checkpoint's outline (its folders, its batches) as the course first draws it: from one walk
and the logs, on checkpoints held in memory (no Spark)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from memory_checkpoints import stopped_checkpoint  # noqa: E402

from state_runbooks.core import outline  # noqa: E402
from state_runbooks.running import plots  # noqa: E402


def test_the_folders_in_the_order_a_batch_writes_them_one_partition_shown_the_rest_counted():
    ckpt = stopped_checkpoint(batches=4, partitions=3)
    lines = outline.outline_lines(outline.folder_outline(ckpt))
    assert lines == [
        "metadata  (the query's id, written at its first start)",
        "offsets/  (4 files; one entry per batch, written before it runs: what it reads, the "
        "watermark it applies, the settings it pins)",
        "    0..3",
        "state/  (16 files; per operator, per partition: the state store's versions)",
        "    0/  (operator 0: 16 files)",
        "        0/  (partition 0: 5 files)",
        "            _metadata/  (the store's key and value schemas: 1 file)",
        "                schema",
        "            1..4 .delta",
        "        _metadata/  (the operator's metadata: 1 file)",
        "            metadata",
        "        1..2/  (partitions 1..2: each 1..4 .delta and _metadata/; 10 files)",
        "commits/  (4 files; one entry per batch, written after it ran: the watermark for the "
        "next)",
        "    0..3"]


def test_the_timeline_says_which_version_each_batch_wrote_and_whose_watermark_it_applied():
    ckpt = stopped_checkpoint(batches=3)
    fs = ckpt.fs
    points = outline.batch_timeline(ckpt)
    assert [(p.batch_id, p.committed, p.state_version, p.watermark_next_ms) for p in points] == [
        (0, True, 1, 0), (1, True, 2, 1000), (2, True, 3, 2000)]
    # These offsets entries apply 0 each: not what the commits before recorded, and said so.
    assert outline.timeline_lines(points) == [
        "every batch N of 0..2 wrote state version N+1",
        "not every batch 1..2 applied the watermark the batch before recorded in its commit "
        "(not 2)",
        "batch 0 applied none: no commit before it recorded one"]
    fs.write_bytes("offsets/3", fs.read_bytes("offsets/2"))  # a batch in flight
    ckpt.refresh()
    last = outline.batch_timeline(ckpt)[-1]
    assert (last.batch_id, last.committed, last.state_version) == (3, False, None)
    table = outline.timeline_table(outline.batch_timeline(ckpt))
    assert list(table.columns) == ["batch", "committed", "state_version", "watermark_applied",
                                   "watermark_for_next"]
    assert table["state_version"].tolist() == [1, 2, 3, "-"]


def test_both_pictures_draw_from_a_checkpoint_with_whole_batch_ids():
    ckpt = stopped_checkpoint(batches=4)
    tree = plots.checkpoint_folder(outline.folder_outline(ckpt))
    timeline = plots.batch_timeline(outline.batch_timeline(ckpt))
    for fig in (tree, timeline):
        fig.canvas.draw()
    assert len(tree.axes[0].texts) >= len(outline.folder_outline(ckpt))
    batch_axis = next(ax for ax in timeline.axes if ax.get_xlabel() == "batch id")
    assert all(float(t).is_integer() for t in batch_axis.get_xticks())


def test_the_timeline_reads_the_newest_batches_and_shows_a_damaged_entry_unknown():
    ckpt = stopped_checkpoint(batches=5)
    assert [p.batch_id for p in outline.batch_timeline(ckpt, newest=3)] == [2, 3, 4]
    ckpt.fs.write_bytes("offsets/3", b"v1\n{\"batchWatermarkMs\":", overwrite=True)  # cut short
    ckpt.refresh()
    points = outline.batch_timeline(ckpt)
    damaged = points[3]
    assert (damaged.batch_id, damaged.readable, damaged.planned_ms,
            damaged.watermark_applied_ms, damaged.committed) == (3, False, None, None, True)
    lines = outline.timeline_lines(points)
    assert lines[-1].startswith("offsets entries 3 do not read (damaged): their times are unknown")
    assert "(not 2, 4)" in lines[1]  # batch 3 is not judged: its entry does not read
    plots.batch_timeline(points).canvas.draw()
