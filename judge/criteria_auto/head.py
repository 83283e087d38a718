"""The ``head`` method of ``criteria: auto``, loaded and predicting: a sequence-classification checkpoint whose
``id2label`` are the taxonomy's leaf labels, read with transformers on CPU (softmax over the logits), its choice made
by the shared policy (``choose_from_scores``). vLLM's pooling runner serves the same folder (``--runner pooling``,
``POST /classify``). Training one is ``judge-train classifier`` (``train/classifier.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judge.criteria_auto.policy import DEFAULT_THRESHOLD, LeafScoresClassifier, leaf_of
from judge.taxonomy import load_taxonomy

__all__ = ["HeadClassifier"]


class HeadClassifier(LeafScoresClassifier):
    """A sequence-classification checkpoint whose ``id2label`` are leaf labels (softmax over the logits).

    Reads with transformers on CPU; vLLM's pooling runner serves the same folder (``--runner pooling``,
    ``POST /classify``).
    """

    name = "head"

    def __init__(self, path: str | Path, threshold: float = DEFAULT_THRESHOLD, max_length: int = 512):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        self.threshold = threshold
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.model = AutoModelForSequenceClassification.from_pretrained(self.path).eval()
        labels = [self.model.config.id2label[i] for i in range(self.model.config.num_labels)]
        taxonomy = load_taxonomy()
        for lab in labels:
            leaf_of(lab, taxonomy)  # a head trained on other labels is refused here, not at judging time
        self.labels = labels

    def predict_proba(self, instructions: Sequence[str]) -> list[dict[str, float]]:
        import torch

        out = []
        for text in instructions:
            enc = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=self.max_length)
            with torch.no_grad():
                probs = torch.softmax(self.model(**enc).logits[0].float(), dim=-1)
            out.append(dict(zip(self.labels, map(float, probs))))
        return out
