"""The files and wire shapes SemIf reads and writes, and their published JSON Schemas (``schemas/``): input rows,
decision records, decision signatures, echoes, the report envelope.

* :mod:`~scorer.formats.json_schemas` — the one loader of ``schemas/*.json``;
* :mod:`~scorer.formats.rows` — decision rows (the input): parsing, validation, field-named errors;
* :mod:`~scorer.formats.signature` — what makes two decisions comparable (calibration statistics are shared by it);
* :mod:`~scorer.formats.echo` — what a record says about its own input;
* :mod:`~scorer.formats.record_schema` — the record schemas, compiled to fast checkers;
* :mod:`~scorer.formats.records` — records (the output): written as JSONL, read back checked;
* :mod:`~scorer.formats.envelope` — what every result report says about itself.
"""
