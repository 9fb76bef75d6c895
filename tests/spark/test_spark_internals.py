"""Every name of Spark's JVM the library calls is in this Spark with the signature the library
calls it with (the index, ``core/spark_internals/signatures.py``): on an upgrade, this names what
moved or changed. A member that is not there is named, so the check is not vacuous."""
from __future__ import annotations

from state_runbooks.core.spark_internals import SIGNATURES, Member, mismatches
from state_runbooks.core.spark_internals.rewriter import REWRITER_CLASS


def test_this_spark_has_every_member_the_library_calls(spark):
    assert mismatches(spark) == []
    assert len(SIGNATURES) > 20


def test_a_member_this_spark_lacks_is_named_with_what_it_has(spark):
    missing = (Member(("org.example.NoSuchClass",), "run"),
               Member((REWRITER_CLASS,), "<init>", ("long",)),
               Member((REWRITER_CLASS,), "field:noSuchField"))
    lines = mismatches(spark, missing)
    assert lines[0] == "NoSuchClass.run(): the class is not in this Spark"
    assert lines[1].startswith("StateRewriter(long): found (SparkSession, long, long, String, ")
    assert lines[2] == "StateRewriter.noSuchField (a field): no such field"
    assert len(lines) == 3
