"""Faces over the network: SemIf's HTTP service and its limits, its scoring queue, MCP, the async client, and Ray.

* :mod:`~scorer.serving.http_server` — limits of a request and of connections, uvicorn bounded by them;
* :mod:`~scorer.serving.queue` — one scoring worker behind a bounded queue, cross-request batching;
* :mod:`~scorer.serving.service` — ``semif serve``: the endpoints over one :class:`~scorer.api.Scorer`;
* :mod:`~scorer.serving.mcp_wire`, :mod:`~scorer.serving.mcp` — ``semif mcp``: the JSON-RPC gate, the tools;
* :mod:`~scorer.serving.client` — an async Python client of the service;
* :mod:`~scorer.serving.ray_data` — ``semif score --engine ray``.

Every face builds one :class:`~scorer.scoring.options.ScorerOptions` and calls the library; a new endpoint or wire
dialect is a module here that translates onto :meth:`scorer.api.Scorer.ask`.
"""
