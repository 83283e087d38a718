"""Ranking a candidate LLM with a judge: answers, verdicts, POLLUX's matrix and its page (`judge-eval rank`)."""
