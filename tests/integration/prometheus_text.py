"""A strict parser of Prometheus' text exposition format, version 0.0.4, written from its specification
(https://prometheus.io/docs/instrumenting/exposition_formats/, "Text format details"). Anything the
specification does not allow raises FormatError naming the line, so that the tests can hold tensorfs to it.

parse(text) -> {family name: Family}; a family holds its HELP, TYPE and samples (for a histogram named x, the
samples x_bucket, x_sum and x_count).
"""
import math
import re
from dataclasses import dataclass, field

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# Go's strconv.ParseFloat as Prometheus uses it, decimal forms and the special values the specification names.
FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?Inf|NaN")
INT64 = re.compile(r"-?\d+")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
BLANKS = " \t"


class FormatError(ValueError):
    pass


@dataclass
class Sample:
    name: str
    labels: dict
    value: float
    timestamp: int = None


@dataclass
class Family:
    name: str
    help: str = None
    type: str = None
    samples: list = field(default_factory=list)


def parse_value(text, where):
    if not FLOAT.fullmatch(text):
        raise FormatError(f"{where}: {text!r} is not a float")
    return float(text.replace("Inf", "inf").replace("NaN", "nan"))


def unescape(text, allowed, where):
    """Backslash escapes: only those in `allowed` ({'\\\\': '\\\\', 'n': '\\n', ...})."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1] not in allowed:
                raise FormatError(f"{where}: bad escape in {text!r}")
            out.append(allowed[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def split_tokens(text):
    return [token for token in re.split(r"[ \t]+", text.strip(BLANKS)) if token]


def parse_labels(text, where):
    """`text` starts after '{'. Returns (labels, the rest of the line after '}')."""
    labels, i = {}, 0
    while True:
        while i < len(text) and text[i] in BLANKS:
            i += 1
        if i < len(text) and text[i] == "}":
            return labels, text[i + 1:]
        match = LABEL_NAME.match(text, i)
        if not match:
            raise FormatError(f"{where}: bad label name at {text[i:]!r}")
        name = match.group()
        if name.startswith("__"):
            raise FormatError(f"{where}: label name {name!r} is reserved")
        if name in labels:
            raise FormatError(f"{where}: label {name!r} twice")
        i = match.end()
        while i < len(text) and text[i] in BLANKS:
            i += 1
        if text[i:i + 2] != '="':
            raise FormatError(f"{where}: expected =\" after label {name!r}")
        i += 2
        start = i
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            raise FormatError(f"{where}: unterminated label value")
        labels[name] = unescape(text[start:i], {"\\": "\\", '"': '"', "n": "\n"}, where)
        i += 1
        while i < len(text) and text[i] in BLANKS:
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
        elif i >= len(text) or text[i] != "}":
            raise FormatError(f"{where}: expected , or }} after a label")


def family_of(sample_name, families):
    """The family a sample belongs to: its own name, or x for x_bucket/x_sum/x_count of a histogram x (x_sum and
    x_count of a summary x)."""
    for suffix, kinds in (("_bucket", {"histogram"}), ("_sum", {"histogram", "summary"}),
                          ("_count", {"histogram", "summary"})):
        base = sample_name[:-len(suffix)]
        if sample_name.endswith(suffix) and base in families and families[base].type in kinds:
            return base
    return sample_name


def check_histogram(family):
    groups = {}
    for sample in family.samples:
        key = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
        groups.setdefault(key, {"buckets": [], "sum": None, "count": None})
        group = groups[key]
        if sample.name == family.name + "_bucket":
            if "le" not in sample.labels:
                raise FormatError(f"{family.name}: a bucket without le")
            group["buckets"].append((parse_value(sample.labels["le"], family.name), sample.value))
        elif sample.name == family.name + "_sum":
            group["sum"] = sample.value
        elif sample.name == family.name + "_count":
            group["count"] = sample.value
        else:
            raise FormatError(f"{family.name}: sample {sample.name} in a histogram")
    for key, group in groups.items():
        bounds = [bound for bound, _ in group["buckets"]]
        if not bounds or bounds[-1] != math.inf:
            raise FormatError(f"{family.name}{dict(key)}: no le=\"+Inf\" bucket last")
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            raise FormatError(f"{family.name}{dict(key)}: buckets not in increasing order of le")
        counts = [count for _, count in group["buckets"]]
        if counts != sorted(counts):
            raise FormatError(f"{family.name}{dict(key)}: bucket counts are not cumulative")
        if group["count"] is None or group["sum"] is None:
            raise FormatError(f"{family.name}{dict(key)}: no _count or no _sum")
        if group["count"] != counts[-1]:
            raise FormatError(f"{family.name}{dict(key)}: _count differs from the +Inf bucket")


def parse(text):
    if not isinstance(text, str):
        raise FormatError("not text")
    if text and not text.endswith("\n"):
        raise FormatError("the last line does not end with a line feed")
    families, finished, seen = {}, set(), set()
    current = None
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        where = f"line {number}"
        stripped = line.strip(BLANKS)
        if not stripped:
            continue
        if stripped.startswith("#"):
            tokens = split_tokens(stripped[1:])
            if not tokens or tokens[0] not in ("HELP", "TYPE"):
                continue  # a plain comment
            if len(tokens) < 2 or not METRIC_NAME.fullmatch(tokens[1]):
                raise FormatError(f"{where}: {tokens[0]} without a valid metric name")
            name = tokens[1]
            if name in finished:
                raise FormatError(f"{where}: the lines of {name} are not one uninterrupted group")
            if current is not None and current != name:
                finished.add(current)
            current = name
            family = families.setdefault(name, Family(name))
            if family.samples:
                raise FormatError(f"{where}: {tokens[0]} of {name} after its samples")
            if tokens[0] == "HELP":
                if family.help is not None:
                    raise FormatError(f"{where}: a second HELP for {name}")
                docstring = re.sub(r"^[ \t]*#[ \t]*HELP[ \t]+" + re.escape(name), "", line, count=1).strip(BLANKS)
                family.help = unescape(docstring, {"\\": "\\", "n": "\n"}, where)
            else:
                if len(tokens) != 3 or tokens[2] not in TYPES:
                    raise FormatError(f"{where}: TYPE needs a name and one of {sorted(TYPES)}")
                if family.type is not None:
                    raise FormatError(f"{where}: a second TYPE for {name}")
                family.type = tokens[2]
            continue
        match = METRIC_NAME.match(stripped)
        if not match:
            raise FormatError(f"{where}: no metric name")
        name, rest = match.group(), stripped[match.end():]
        labels = {}
        if rest.startswith("{"):
            labels, rest = parse_labels(rest[1:], where)
        elif rest and rest[0] not in BLANKS:
            raise FormatError(f"{where}: metric name {name!r} runs into {rest!r}")
        tokens = split_tokens(rest)
        if len(tokens) not in (1, 2):
            raise FormatError(f"{where}: expected a value and an optional timestamp, got {tokens}")
        value = parse_value(tokens[0], where)
        timestamp = None
        if len(tokens) == 2:
            if not INT64.fullmatch(tokens[1]) or not -2**63 <= int(tokens[1]) < 2**63:
                raise FormatError(f"{where}: timestamp {tokens[1]!r} is not an int64")
            timestamp = int(tokens[1])
        family_name = family_of(name, families)
        if family_name in finished:
            raise FormatError(f"{where}: the lines of {family_name} are not one uninterrupted group")
        if current is not None and current != family_name:
            finished.add(current)
        current = family_name
        family = families.setdefault(family_name, Family(family_name))
        identity = (name, tuple(sorted(labels.items())))
        if identity in seen:
            raise FormatError(f"{where}: {name}{labels} twice")
        seen.add(identity)
        family.samples.append(Sample(name, labels, value, timestamp))
    for family in families.values():
        if family.type == "histogram":
            check_histogram(family)
    return families
