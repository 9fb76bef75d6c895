"""A "Try it yourself" exercise: one parameter changed, a question to predict, and the answer the
run computes for that change, checked against the trainee's prediction.

Each runbook package computes its exercise from what its notebook already holds (``Exercise``); the
notebook's parameters cell declares ``my_prediction`` (so a run takes it: ``-p my_prediction 40``),
the exercise cell never sets it again (a trainee may, in Jupyter) and prints
:meth:`Exercise.check`. The answer is never shown before a prediction is made.
"""
from __future__ import annotations

from dataclasses import dataclass

NO_PREDICTION = ("no prediction yet: set my_prediction in this cell to your answer and run it "
                 "again")


def with_change(name: str, value, current) -> str:
    """The start of a question that changes the parameter ``name`` to ``value``: "With name=value
    instead of current", or, when this run already has that value (the notebook rerun with it),
    "With name=value, as this run has it". Numbers in their shortest form."""
    def shown(x):
        return f"{x:g}" if isinstance(x, float) else str(x)

    if shown(value) == shown(current):
        return f"With {name}={shown(value)}, as this run has it,"
    return f"With {name}={shown(value)} instead of {shown(current)},"


@dataclass(frozen=True)
class Exercise:
    question: str  # what to predict, with the change made
    answer: object  # what the run says, for that change: a number or a word
    why: str  # how the run knows, in a few words (shown with the verdict)

    def is_right(self, prediction) -> bool:
        """A number within 0.5% of the answer (rounding), or the same words in any case."""
        if isinstance(self.answer, (int, float)) and not isinstance(self.answer, bool):
            try:
                value = float(str(prediction).replace(",", "").replace("_", ""))
            except ValueError:
                return False
            return abs(value - self.answer) <= abs(self.answer) * 0.005
        return " ".join(str(prediction).split()).lower() == " ".join(str(self.answer).split()) \
            .lower()

    def check(self, prediction) -> str:
        """One line: right, or why not (the answer is then shown)."""
        if prediction is None or str(prediction).strip() == "":
            return NO_PREDICTION
        if self.is_right(prediction):
            return f"right: {self.answer} ({self.why})"
        return f"not quite: you said {prediction}; the run says {self.answer}, because {self.why}"
