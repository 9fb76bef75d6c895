"""A checkpoint's diagnosis, shared by the runbooks that judge whether its state loads (05
recover corrupted state, 13 fleet health): its logs' damage (:mod:`.log_damage`), its files
against what each committed batch needs (:mod:`.structure`), and the load test with the search
for the last good batch (:mod:`.diagnose`)."""
