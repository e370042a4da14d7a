"""scorer.models."""
