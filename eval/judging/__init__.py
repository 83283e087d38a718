"""Running a judge: the run loop, its backends, predictions files, local checkpoints (`judge-eval run`)."""
