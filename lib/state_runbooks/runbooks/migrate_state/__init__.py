"""The migrate-state runbook (10): carry a checkpoint's state through a change to the query that
Spark's restart check refuses (a key column added or widened, an aggregate added, a value field
changed), so that the changed query restarts with its state.

One module per concern:

- :mod:`.schema_change`: every store's key and value, old and new (the new ones from Spark's own
  planning of the changed query), and what Spark's restart check says;
- :mod:`.mapping`: where each new field comes from (the same field, a lossless cast, a ``fill``
  expression), decided on the schemas alone; what cannot be mapped is refused;
- :mod:`.checks`: what the migration requires, each requirement checked;
- :mod:`.rows`: the mapped rows and where Spark keeps each one;
- :mod:`.plan`: per store, rows now and after, examples, the checksum the result must equal;
- :mod:`.location`: the folder Spark writes the migrated batch into, and, in place, how it
  joins the checkpoint;
- :mod:`.apply`: the change through the procedure every changing runbook follows
  (:mod:`state_runbooks.safety.change`): Spark's state rewriter, Spark's restart check and every
  store read back as its verification; ``undo``;
- :mod:`.report`: the lines a reader sees, the other ways, the summary, what the demo showed;
- :mod:`.demo`: 08's example job migrated, continued, and compared with a run from scratch.
"""
from state_runbooks.query.job import load_job
from state_runbooks.safety.requirements import (
    TARGET_PROVIDERS,
    check_target_provider,
    requirement_lines,
)

from .apply import MIGRATE, Migrated, migrate, undo
from .checks import VERIFIED_FAMILIES, Checks, check_requirements
from .demo import (
    DEMO,
    DEMO_FILL,
    DEMO_FUNCTION,
    DEMO_JOB_FILE,
    DemoResult,
    job_to_migrate,
    run_demo,
)
from .exercise import try_it
from .mapping import parse_fill
from .plan import Plan, StorePlan, plan_migration, plan_unless_active
from .report import (
    alternatives_lines,
    demo_lines,
    mapping_lines,
    plan_lines,
    schema_lines,
    spark_lines,
    summarize,
    what_this_showed,
)
from .schema_change import SchemaChange, StoreChange, compare_schemas

__all__ = [
    "try_it",
    "MIGRATE", "Migrated", "migrate", "undo",
    "VERIFIED_FAMILIES", "Checks", "check_requirements", "TARGET_PROVIDERS",
    "check_target_provider", "requirement_lines", "load_job",
    "DEMO", "DEMO_FILL", "DEMO_FUNCTION", "DEMO_JOB_FILE", "DemoResult", "job_to_migrate",
    "run_demo",
    "parse_fill",
    "Plan", "StorePlan", "plan_migration", "plan_unless_active",
    "alternatives_lines", "demo_lines", "mapping_lines", "plan_lines", "schema_lines", "spark_lines",
    "summarize", "what_this_showed",
    "SchemaChange", "StoreChange", "compare_schemas",
]
