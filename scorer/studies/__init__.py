"""Measurements that need models and produce reports, run by hand or by ``benchmarks/``: throughput of the modes
(``bench``), typed vs generated (``versus``, traced), the quantization ladder and schemes (``quant``,
``quant_cache``, ``quant_schemes``)."""
