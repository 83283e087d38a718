"""The experts' own tables: per model, split, task type and criterion (`judge-eval experts`)."""
