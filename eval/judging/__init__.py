"""Running a judge: the run loop, its backends, predictions files, local checkpoints (`judge-eval run`); an eval
array's data as its tasks cut it (`array_data`, run by `slurm/eval.sbatch`) and its shards merged
(`judge-eval merge`)."""
