"""One package per runbook notebook, named after it. A runbook package imports the layers below
and never another runbook package: what two runbooks share lives in a lower layer."""
