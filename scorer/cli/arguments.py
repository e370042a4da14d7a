"""Options several commands share: which model runs where, the ``--exact`` policy, checked number types.

A command adds a group with ``add_*_args(parser)`` and turns the parsed arguments into the typed
config its run takes (:func:`backend_config`, :func:`exact_policy`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scorer.backends import BackendConfig
from scorer.backends.base import Backend
from scorer.backends.registry import BACKENDS
from scorer.core import checks as rules
from scorer.core.checks import DEVICES, DTYPES, MODES, OptionError
from scorer.core.errors import InputError
from scorer.models import store
from scorer.scoring.drift import DEFAULT_PROBE_ROWS, DEFAULT_SAFETY
from scorer.scoring.exact import ExactPolicy
from scorer.scoring.options import DEFAULT_SLOTS, ScorerOptions
from scorer.scoring.systemone_wire import BACKEND as DECISION_BACKEND


def _rule(check: Callable[[Any], Any], word: Callable[[str], Any] = lambda t: t) -> Callable[[str], Any]:
    """An argparse ``type=`` that applies one of :mod:`scorer.core.checks`' rules (the API's too) to a word: its
    refusal becomes a usage error with the rule's own words (``argument --threads: 0 is not an integer >= 1``)."""

    def parse(text: str) -> Any:
        try:
            return check(word(text))
        except OptionError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    parse.__name__ = getattr(check, "__name__", "value")  # argparse names the type in some messages
    return parse


class Given(argparse.Action):
    """``store``, and the option's ``dest`` remembered in ``namespace.given`` (a set): a preset (``--preset``) fills
    only the options the command line did not give, whatever value they were given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def given(args: argparse.Namespace) -> set[str]:
    """The ``dest`` of every :class:`Given` option the command line named."""
    return set(getattr(args, "given", ()))


positive_int = _rule(rules.positive_int, rules.cli_int)
"""argparse type: an integer >= 1 (``0`` and negatives are refused, never silently ignored)."""
positive_float = _rule(rules.positive_float, rules.cli_float)
"""argparse type: a finite number > 0."""
non_negative_float = _rule(rules.non_negative_float, rules.cli_float)
"""argparse type: a finite number >= 0."""
threads_arg = _rule(rules.threads, rules.cli_int)
"""argparse type: CPU threads, an integer >= 1 or ``auto`` (:func:`scorer.core.checks.threads`)."""


def choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    """argparse type: one of ``choices``, by the rule the API applies (pass ``choices=`` too, for the help)."""
    return _rule(lambda v: rules.one_of(v, choices))


def comma_list(text: str) -> list[str]:
    """The non-empty items of a comma list (``"a, b,"`` -> ``["a", "b"]``)."""
    return [x.strip() for x in text.split(",") if x.strip()]


# --- the model ------------------------------------------------------------------------------------------------------
def add_model_args(p: argparse.ArgumentParser, many: bool = False, decision_api: bool = False) -> None:
    """The ``model`` group: registry key or path, backend, device, dtype, threads, llama.cpp options. ``many``:
    ``--model`` may be given several times (``semif serve``: every one is served; :func:`backend_configs`).
    ``decision_api``: ``--backend`` also offers ``systemone``, a remote decision API (``semif score`` only: it writes
    records without a token-level backend, :mod:`scorer.scoring.systemone_run`)."""
    backends = (*BACKENDS, DECISION_BACKEND) if decision_api else BACKENDS
    g = p.add_argument_group("model")
    if many:
        g.add_argument("--model", action="append", metavar="MODEL|SPEC",
                       help=f"a model to serve, by its name: registry key ({', '.join(store.REGISTRY)}), .gguf path, "
                            "local HF folder or ORG/NAME, with the backend options below; or a SPEC "
                            "backend=...,model=...[,threads=...] with its own; repeat to serve several (the first is "
                            f"the default; default {store.DEFAULT_MODEL})")
    else:
        g.add_argument("--model", default=store.DEFAULT_MODEL,
                       help=f"registry key ({', '.join(store.REGISTRY)}), .gguf path, local HF folder, or ORG/NAME "
                            f"(with --revision); default {store.DEFAULT_MODEL}")
    g.add_argument("--revision", help="hub commit (40 hex) for ORG/NAME models")
    g.add_argument("--backend", type=choice(backends), choices=backends, default="torch",
                   help="the token-level backend" + ("; systemone: a remote TypeSafe System One decision API (records "
                                                     "of its probabilities, no token-level audit)" if decision_api
                                                     else ""))
    g.add_argument("--device", type=choice(DEVICES), choices=DEVICES, default="cpu", help="torch device")
    g.add_argument("--dtype", type=choice(DTYPES), choices=DTYPES,
                   help="torch dtype (default fp32 on cpu, bf16 on cuda)")
    g.add_argument("--threads", "--llama-threads", type=threads_arg, metavar="N|auto",
                   help="CPU threads (torch intra-op / llama.cpp n_threads and n_threads_batch): N >= 1, or auto (the "
                        "cores free when the model loads: usable cores less those other work keeps busy); default: "
                        "the library's choice. Threads wait passively (OMP_WAIT_POLICY=PASSIVE) unless "
                        "OMP_WAIT_POLICY or SEMIF_WAIT_POLICY=passive|active|library says otherwise")
    g.add_argument("--gguf", help="llama.cpp: GGUF file to load (default: the model store's file for --model)")
    g.add_argument("--llama-gpu-layers", type=_rule(rules.gpu_layers), default="0",
                   help="llama.cpp: layers to offload, N >= 0 or auto (default 0)")
    remote = "openai, systemone" if decision_api else "openai"
    g.add_argument("--base-url", help=f"{remote}: the engine's URL (vLLM, llama.cpp server"
                                      + (", a System One server's root" if decision_api else "")
                                      + "), e.g. http://127.0.0.1:8080")
    g.add_argument("--api-key-env", metavar="NAME",
                   help=f"{remote}: environment variable holding the API key (sent as a bearer token)")
    g.add_argument("--served-model", help=f"{remote}: the model name the engine serves (default: the only one it "
                                          "lists)")
    g.add_argument("--concurrency", type=positive_int, default=4, help=f"{remote}: requests in flight (default 4)")
    g.add_argument("--retries", type=_rule(rules.non_negative_int, rules.cli_int), default=5,
                   help=f"{remote}: retries on 429/503/connection errors (default 5"
                        + ("; systemone also on 408, any 5xx and timeouts" if decision_api else "") + ")")


def add_mode_arg(p: Any, default: str, flag: str = "--mode", help: str | None = None) -> None:
    """A scoring mode option (``--mode``; ``semif route``'s ``--fast-mode``), by the API's rule."""
    if help is None:
        help = (f"direct: a fresh forward pass per decision; serial: each state's prefix prefilled once and reused; "
                f"shared: a state's rows packed into one pass after it (default {default})")
    p.add_argument(flag, type=choice(MODES), choices=MODES, default=default, help=help)


def add_slots_arg(p: Any, norm: bool = True, default: str = "letters") -> None:
    """``--slots letters|ids|sequence|codes|json|auto`` (and, where records are scored, ``--sequence-norm
    sum|mean``): what the decision is read out through, by the API's rule (``default``: letters for a records run,
    the scorer's :data:`~scorer.scoring.options.DEFAULT_SLOTS` for ``ask``, ``serve`` and ``mcp``)."""
    p.add_argument("--slots", type=choice(rules.SLOTS), choices=rules.SLOTS, default=default, action=Given,
                   help="letters: the options lettered A, B, ... and each letter's token read; ids: the "
                        "options listed under their ids and each id's own token read (every id one token, e.g. "
                        "yes/no; a row whose id is not is refused naming options[i].id); sequence: the ids prompt, "
                        "each id scored as a continuation of it (its tokens' log-probabilities, any length); codes: "
                        "the options numbered 01, 02, ... and each number scored as a continuation (how letters read "
                        "a question with more than 16 options, up to 255); json: the state, then the question with "
                        "the options under their ids in a second user turn, the answer asked for as JSON and each "
                        "option scored as the quoted id after a prefilled {\"answer\": (per token by default); "
                        "auto: a yes/no question read as json reads it, every other by letters (a choice question "
                        "as json too for weights measured to answer so, qwen2.5-1.5b) "
                        f"(default {default}"
                        + ("; letters with --calibration or --backend openai)" if default == DEFAULT_SLOTS else ")"))
    if norm:
        p.add_argument("--sequence-norm", type=choice(rules.SEQUENCE_NORMS), choices=rules.SEQUENCE_NORMS,
                       action=Given,
                       help="--slots sequence, json or auto: an option's score is the sum of its tokens' "
                            f"log-probabilities (default {rules.DEFAULT_SEQUENCE_NORM}, auto's json answers "
                            f"included; json: {rules.JSON_SEQUENCE_NORM}) or their mean (per token)")


def sequence_norm(args: argparse.Namespace) -> str | None:
    """``--sequence-norm`` checked against ``--slots`` (given without ``--slots sequence``: refused, exit 2)."""
    return rules.check_sequence_norm(args.sequence_norm, args.slots)


def add_max_batch_tokens_arg(p: Any) -> None:
    """``--max-batch-tokens``: shared mode's suffix tokens per pass, by the API's rule."""
    p.add_argument("--max-batch-tokens", type=positive_int, default=rules.DEFAULT_MAX_BATCH_TOKENS,
                   help="shared mode: suffix tokens per pass, >= 1")


def add_prefix_cache_arg(p: Any) -> None:
    """``--prefix-cache-bytes``: the radix prefix cache's memory budget (serial and shared modes), by the API's
    rule."""
    from scorer.scoring.radix_cache import DEFAULT_BUDGET_BYTES

    p.add_argument("--prefix-cache-bytes", type=_rule(rules.byte_size, rules.cli_int), default=DEFAULT_BUDGET_BYTES,
                   metavar="SIZE",
                   help="serial/shared modes: memory budget of the radix prefix cache's states (bytes, or with a "
                        f"binary unit: 512M, 2G; default {DEFAULT_BUDGET_BYTES >> 30} GiB); least recently used "
                        "leaves are evicted past it")


def backend_config(args: argparse.Namespace) -> BackendConfig:
    """The :class:`~scorer.backends.BackendConfig` of the ``model`` group's arguments."""
    return BackendConfig(model=args.model, revision=args.revision, backend=args.backend, device=args.device,
                         dtype=args.dtype, threads=args.threads, gguf=args.gguf,
                         llama_gpu_layers=args.llama_gpu_layers, base_url=args.base_url,
                         api_key_env=args.api_key_env, served_model=args.served_model,
                         concurrency=args.concurrency, retries=args.retries)


def backend_configs(args: argparse.Namespace) -> list[BackendConfig]:
    """Every ``--model`` of a command that takes several (:func:`add_model_args` with ``many``): a name with the
    backend options given, or a SPEC with its own (:func:`parse_spec`; a SPEC's ``mode`` and ``calibration`` are
    the server's to set, so refused there). Two with one name are refused."""
    out: list[BackendConfig] = []
    for text in args.model or [store.DEFAULT_MODEL]:
        if "=" in text:
            cfg, mode, cal = parse_spec(text, "--model")
            if mode is not None or cal is not None:
                raise InputError("--model", None, None, f"{text!r} sets mode or calibration",
                                 "backend and model keys only (the server's --mode and --calibration apply to all)")
        else:
            cfg = backend_config(argparse.Namespace(**{**vars(args), "model": text}))
        if any(c.model == cfg.model for c in out):
            raise InputError("--model", None, None, f"{cfg.model!r} given twice", "each served model once")
        out.append(cfg)
    return out


def load_model(args: argparse.Namespace) -> Backend:
    """Load the backend of the ``model`` group's arguments through :data:`scorer.cli.load_backend` (looked up
    at call time: the one seam tests replace with a fake backend)."""
    from scorer import cli

    return cli.load_backend(backend_config(args))


# --- the prompt: layout and demonstrations ---------------------------------------------------------------------------
def add_layout_args(p: argparse.ArgumentParser, auto: bool = True) -> None:
    """``--layout`` and the demonstrations (``--demos FILE --demos-k K --seed S``) of every command that builds
    prompts. ``auto`` (a per-run choice over the rows) only where a command scores a run of rows."""
    from scorer.prompting.demos import DEFAULT_K, DEFAULT_SEED
    from scorer.prompting.layouts import LAYOUT_CHOICES, LAYOUTS, STATE_MAJOR

    names = LAYOUT_CHOICES if auto else LAYOUTS
    g = p.add_argument_group("prompt")
    g.add_argument("--layout", type=choice(names), choices=names, default=STATE_MAJOR, action=Given,
                   help="state-major: system, state, question, options (semif-direct-v1; with --demos the "
                        "demonstrations come first: semif-state-major-demos-v1); question-major: system, "
                        "demonstrations, question, options, then the state (semif-question-major-v1)"
                        + ("; auto: per run, whichever shares more prefix tokens over the rows" if auto else "")
                        + f" (default {STATE_MAJOR})")
    g.add_argument("--demos", metavar="FILE", action=Given,
                   help="labelled rows (input schema, with label) shown before each decision as earlier chat turns: "
                        "per signature, else family, else any; never the row or a row of its group")
    g.add_argument("--demos-k", type=positive_int, metavar="K", action=Given,
                   help=f"--demos: demonstrations per decision, balanced over labels (default {DEFAULT_K})")
    g.add_argument("--seed", type=_rule(rules.non_negative_int, rules.cli_int), metavar="S", action=Given,
                   help=f"--demos: the seed that orders the candidates (default {DEFAULT_SEED})")


def layout_options(args: argparse.Namespace) -> tuple[str, Any]:
    """The layout and the loaded :class:`~scorer.prompting.demos.Demos` (None without ``--demos``) of
    :func:`add_layout_args`' arguments; a bad demonstrations file is refused here, before any model loads."""
    from scorer.prompting.demos import DEFAULT_K, DEFAULT_SEED, load_demos
    if args.demos is None:
        for flag, value in (("--demos-k", args.demos_k), ("--seed", args.seed)):
            if value is not None:
                raise InputError(flag, None, None, "given without --demos", f"--demos FILE {flag} VALUE")
        return args.layout, None
    k = DEFAULT_K if args.demos_k is None else args.demos_k
    seed = DEFAULT_SEED if args.seed is None else args.seed
    return args.layout, load_demos(args.demos, k, seed)


# --- how a scorer scores: the options every face shares ---------------------------------------------------------------
def add_echo_arg(p: argparse.ArgumentParser) -> None:
    """``--echo [full]``: the question, options and a state digest (or the state) in every record."""
    p.add_argument("--echo", nargs="?", const="digest", choices=("digest", "full"),
                   help="store the question, the options and the state's sha256 in every record (`--echo full`: "
                        "the state itself too), so a record can be audited alone")


def add_uncovered_arg(g: Any) -> None:
    """``--uncovered error|raw`` (with ``--calibration``)."""
    g.add_argument("--uncovered", choices=("error", "raw"), default="error",
                   help="--calibration: a row whose signature the file does not cover is refused before anything is "
                        "scored (error, default) or scored with its raw numbers and flagged `calibrated.uncovered` "
                        "(raw). A file for another model is refused either way, before the model loads")


def add_preset_arg(p: argparse.ArgumentParser) -> None:
    """``--preset NAME|FILE.json``."""
    p.add_argument("--preset", metavar="NAME|FILE.json",
                   help="score with a committed configuration (scorer/data/presets/NAME.json: layout, demonstrations, "
                        "readout, calibration, written by benchmarks/quality_study.py --write-preset); options given "
                        "explicitly override its values, and every record names the preset")


def add_label_free_arg(p: Any) -> None:
    """``--label-free METHOD``: the label-free correction of every request (:mod:`scorer.calibration.label_free`)."""
    from scorer.calibration.label_free_defaults import CHOICES, PER_KIND, check_label_free

    p.add_argument("--label-free", type=_rule(check_label_free), default=ScorerOptions.label_free,
                   metavar="METHOD",
                   help=f"correct every question's readout without labels from a few more prompts about it: "
                        f"{', '.join(CHOICES)}, or one method per kind of question, {PER_KIND} (default "
                        f"{ScorerOptions.label_free}: per kind, the method the single-request studies measured best "
                        "for the loaded weights and readout, none where nothing was measured; docs/results.md); a "
                        "--calibration file that covers a question wins")


def add_scorer_args(p: argparse.ArgumentParser) -> None:
    """The flags of :class:`~scorer.scoring.options.ScorerOptions` (``semif ask``, ``semif serve``, ``semif mcp``): its
    fields, with its defaults, under the same rules as the API's keywords (:func:`scorer_options` reads them back)."""
    add_mode_arg(p, ScorerOptions.mode, help=f"scoring mode (default {ScorerOptions.mode}: rows about one state are "
                                              "prefilled once and packed)")
    add_max_batch_tokens_arg(p)
    p.add_argument("--calibration", metavar="FILE",
                   help="a prior or bias file (semif calibrate prior|bias): every record gets its calibrated block")
    add_uncovered_arg(p)
    add_label_free_arg(p)
    add_echo_arg(p)
    add_slots_arg(p, default=DEFAULT_SLOTS)
    add_layout_args(p)
    add_prefix_cache_arg(p)
    add_preset_arg(p)


def scorer_options(args: argparse.Namespace) -> ScorerOptions:
    """The :class:`~scorer.scoring.options.ScorerOptions` of :func:`add_scorer_args`' flags: an option the command
    line did not name is left None, for a preset to fill (else its default applies, as in the API). Flags that only
    make sense together are refused here, before any model loads."""
    named = given(args)
    if args.uncovered != "error" and not args.calibration and not args.preset:
        raise InputError("--uncovered", None, None, f"{args.uncovered} given without --calibration",
                         "--calibration FILE --uncovered raw")
    if args.demos is None and not args.preset:
        for flag, value in (("--demos-k", args.demos_k), ("--seed", args.seed)):
            if value is not None:
                raise InputError(flag, None, None, "given without --demos", f"--demos FILE {flag} VALUE")
    return ScorerOptions(mode=args.mode, max_batch_tokens=args.max_batch_tokens, calibration=args.calibration,
                         on_uncovered=args.uncovered, label_free=args.label_free, echo=args.echo,
                         slots=args.slots if "slots" in named else None, sequence_norm=args.sequence_norm,
                         layout=args.layout if "layout" in named else None, demos=args.demos, demos_k=args.demos_k,
                         seed=args.seed, prefix_cache_bytes=args.prefix_cache_bytes, preset=args.preset)


# --- the exact policy -----------------------------------------------------------------------------------------------
def add_exact_args(p: argparse.ArgumentParser) -> None:
    """The ``--exact`` options (``semif score``)."""
    g = p.add_argument_group("exactness")
    g.add_argument("--exact", action="store_true",
                   help="re-score on the fresh path every fast-path decision whose margin is below a bound derived "
                        "from measured drift, so the choices equal fresh scoring's")
    add_exact_tuning_args(g, drift_help="--exact: take the drift from this `semif drift` report of the same "
                                        "configuration (else a probe of the first rows measures it)",
                          probe_help="--exact without --drift-report: rows scored both ways to measure drift")


def add_exact_tuning_args(g: Any, drift_help: str, probe_help: str) -> None:
    """Where the exact policy's bound comes from: ``--drift-report``, ``--exact-safety``, ``--exact-probe``
    (shared by ``semif score``, where the policy is opt-in, and ``semif versus``, where it is on)."""
    g.add_argument("--drift-report", help=drift_help)
    g.add_argument("--exact-safety", type=float, default=DEFAULT_SAFETY,
                   help=f"bound = SAFETY x 2 x max|dp| (default {DEFAULT_SAFETY:g})")
    g.add_argument("--exact-probe", type=int, default=DEFAULT_PROBE_ROWS, metavar="N",
                   help=f"{probe_help} (default {DEFAULT_PROBE_ROWS})")


def exact_policy(args: argparse.Namespace) -> ExactPolicy | None:
    """The :class:`~scorer.scoring.exact.ExactPolicy` of ``--exact`` and its tuning options (None without it)."""
    if not getattr(args, "exact", False):
        if getattr(args, "drift_report", None):
            raise InputError("--drift-report", None, None, "given without --exact", "--exact --drift-report PATH")
        return None
    return ExactPolicy(safety=args.exact_safety, probe_rows=args.exact_probe,
                       report=Path(args.drift_report) if args.drift_report else None)


# --- evaluation reports ---------------------------------------------------------------------------------------------
def add_report_args(p: argparse.ArgumentParser, labels_help: str = "decision input file with label/family/group "
                    "fields (default: the records' extra.label)") -> None:
    """``--labels``, ``--output``, ``--force``, ``--reps``, ``--seed`` of the evaluation reports (``semif eval``,
    ``calibrate temperature``, ``order``, ``route``)."""
    from scorer.evaluation import metrics

    p.add_argument("--labels", help=labels_help)
    p.add_argument("--output", help="JSON report path (default data/results/<kind>-<run>.json)")
    p.add_argument("--force", action="store_true", help="overwrite an existing report")
    p.add_argument("--reps", type=int, default=metrics.BOOTSTRAP_REPS, help="bootstrap replicates")
    p.add_argument("--seed", type=int, default=metrics.BOOTSTRAP_SEED, help="bootstrap seed")


# --- engine SPECs (semif score --fast SPEC --accurate SPEC) ---------------------------------------------------------
SPEC_KEYS = ("backend", "model", "revision", "base_url", "served_model", "api_key_env", "concurrency", "retries",
             "threads", "gguf", "device", "dtype", "mode", "calibration")
"""What a SPEC may name: the model group's options (as ``key=value``), the mode it scores in, a calibration file."""


def parse_spec(text: str, flag: str) -> tuple[BackendConfig, str | None, str | None]:
    """``backend=openai,base_url=http://127.0.0.1:8080,model=qwen2.5-0.5b,mode=shared`` (or ``@FILE.json``, an
    object with the same keys) → the backend config, the mode (None: the run's default) and the calibration
    file (None: none). A bad SPEC is an :class:`InputError` naming the flag and the key."""
    import json

    raw: dict[str, Any]
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(flag, None, None, f"cannot read {path}: {exc.strerror}", "a readable JSON file") from None
        except ValueError as exc:
            raise InputError(str(path), None, None, f"not JSON ({exc})", "a JSON object of SPEC keys") from None
        if not isinstance(raw, dict):
            raise InputError(str(path), None, None, "not a JSON object", "a JSON object of SPEC keys")
    else:
        raw = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise InputError(flag, None, None, f"{part!r} is not key=value",
                                 f"comma-separated key=value pairs; keys: {', '.join(SPEC_KEYS)}")
            raw[key.strip()] = value.strip()
    unknown = [k for k in raw if k not in SPEC_KEYS]
    if unknown:
        raise InputError(flag, None, unknown[0], "unknown SPEC key", f"one of {', '.join(SPEC_KEYS)}")
    if "model" not in raw:
        raise InputError(flag, None, "model", "missing", "model=KEY|PATH|ORG/NAME")
    mode = raw.pop("mode", None)
    if mode is not None and mode not in MODES:
        raise InputError(flag, None, "mode", f"{mode!r}", f"one of {', '.join(MODES)}")
    calibration = raw.pop("calibration", None)
    try:
        for k in ("concurrency", "retries", "threads"):
            if k in raw and isinstance(raw[k], str):
                raw[k] = rules.cli_int(raw[k])
        cfg = BackendConfig(**raw)
    except OptionError as exc:
        raise InputError(flag, None, exc.option or "spec", exc.problem, "a valid value for that key") from None
    if cfg.backend == "openai" and not cfg.base_url:
        raise InputError(flag, None, "base_url", "missing for backend=openai", "base_url=http://HOST:PORT")
    return cfg, mode, calibration
