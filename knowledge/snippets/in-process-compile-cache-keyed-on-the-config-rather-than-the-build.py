"""An in-process compile cache must be keyed on what is built, not on the request that asked
for it; and the test that catches the difference (host code, runs anywhere).

The toy plan mirrors our MLA decode's default: `step=0` resolves per problem to a build (62
where the sequences pair up on the SMs, 67 elsewhere) from b and t, fields the compiled code
takes at run time and the key therefore leaves out. A "binary" here is just its build's
number, so a launch says which build ran. The test runs the rows in every order in one
process, and asserts that keys differ wherever builds differ.

Shown in
knowledge/anti-patterns/in-process-compile-cache-keyed-on-the-config-rather-than-the-build.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import itertools
import json

RUNTIME_FIELDS = ("b", "t")  # the compiled code does not specialise on these


def build_of(problem: dict, config: dict) -> int:
    """What the config builds for this problem. An explicit step is itself; the default
    resolves per problem, here from b (66 parts: b <= 33 pairs every sequence)."""
    if config["step"]:
        return config["step"]
    return 62 if problem["b"] <= 33 else 67


def key_from_request(problem: dict, config: dict) -> tuple:
    # WRONG: the config and the fields the code specialises on; step=0 is one key for all b
    fixed = {k: v for k, v in problem.items() if k not in RUNTIME_FIELDS}
    return (json.dumps(config, sort_keys=True), json.dumps(fixed, sort_keys=True))


def key_from_build(problem: dict, config: dict) -> tuple:
    # RIGHT: add the resolved build (and anything else that selects the compiled code)
    return key_from_request(problem, config) + (build_of(problem, config),)


class CompileCache:
    def __init__(self, key_fn, compile_fn):
        self.key_fn, self.compile_fn, self.compiled = key_fn, compile_fn, {}

    def get(self, problem: dict, config: dict):
        key = self.key_fn(problem, config)
        if key not in self.compiled:  # a hit skips compile_fn, and with it build_of
            self.compiled[key] = self.compile_fn(build_of(problem, config))
        return self.compiled[key]


def wrong_launches(key_fn, rows: list, config: dict) -> list:
    """Every order of the rows in ONE process (as a table run does): the (order, row, build
    launched) where a row ran another row's build. One fixed order tests one case."""
    bad = []
    for order in itertools.permutations(rows):
        cache = CompileCache(key_fn, compile_fn=lambda build: build)  # binary = its build
        for p in order:
            if cache.get(p, config) != build_of(p, config):
                bad.append((order, p, cache.get(p, config)))
    return bad


def keys_split_builds(key_fn, rows: list, config: dict) -> bool:
    """The static test: two problems with different builds never share a key."""
    return all(
        key_fn(p, config) != key_fn(q, config)
        for p, q in itertools.combinations(rows, 2)
        if build_of(p, config) != build_of(q, config)
    )


# snippet:end

ROWS = [
    {"b": 32, "t": 4096, "h": 128, "s": 1},
    {"b": 64, "t": 4096, "h": 128, "s": 1},
    {"b": 128, "t": 4096, "h": 128, "s": 1},
    {"b": 128, "t": 16384, "h": 128, "s": 1},
]
DEFAULT = {"step": 0}
EXPLICIT = {"step": 61}


def compile_snippet():
    """The wrong key fails both tests on the default and passes them on an explicit step
    (one build for every row); the right key passes both."""
    bad = wrong_launches(key_from_request, ROWS, DEFAULT)
    assert bad and not keys_split_builds(key_from_request, ROWS, DEFAULT)
    # the table's own order, (32, 4096) first: every later row launched 62's build
    first = [(p["b"], p["t"], got) for order, p, got in bad if order == tuple(ROWS)]
    assert first == [(64, 4096, 62), (128, 4096, 62), (128, 16384, 62)], first
    assert not wrong_launches(key_from_request, ROWS, EXPLICIT)
    assert not wrong_launches(key_from_build, ROWS, DEFAULT)
    assert keys_split_builds(key_from_build, ROWS, DEFAULT)
    orders = len(list(itertools.permutations(ROWS)))
    return f"config key: {len(bad)} wrong launches over {orders} orders; build key: none"


def check():
    """No GPU needed: the same assertions."""
    return compile_snippet()
