"""SemIf: semantic ifs — typed decisions read from option-letter logits in one forward pass."""

__version__ = "0.1.0"
