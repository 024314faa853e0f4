"""`mysched import-maui`: a maui.cfg becomes a commented mysched configuration.

VOs and groups, as a grid site's admin would map them: a MAUI *group* is a unix group (on a
grid site the pool-account groups of a VO: atlas, atlasprd, atlassgm), a MAUI *account* the
nearest thing MAUI has to a VO. So ACCOUNTCFG[x] becomes VO x; GROUPCFG[g] becomes group g of
the VO `--vo-map` names, else of the account named g, else of the VO of the shortest other
configured name (of at least 3 characters) that g begins with (atlasprd -> atlas: said on
standard error), else of a VO of its own named g. A VO's share is its account's FSTARGET, else
the sum of its groups'; several groups of one VO keep their FSTARGETs as weights
(groups.g.share). Shares over 100 % in all are scaled down to 100 % (mysched's shares are
guarantees).

Everything is written with the MAUI line it came from; what cannot be carried over is a
``FILE:LINE`` note naming what mysched does instead (`mauinotes` holds both tables).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from mysched.config.mauicfg import MauiFile, Setting, items, limit, percent, read_maui
from mysched.config.mauinotes import ATTRS, PARAMS, instead, known
from mysched.config.values import name as checked_name
from mysched.core.model.durations import parse_duration
from mysched.errors import clip

_SETTING_NAME = re.compile(r"[A-Za-z*][-A-Za-z0-9_*]*\Z")
"""What libconfig takes as a setting name (a block such as groups.NAME)."""
_DAYS = {"MON": 0, "TUE": 1, "WED": 2, "THU": 3, "FRI": 4, "SAT": 5, "SUN": 6}
DAY, WEEK = 86400.0, 7 * 86400.0
MAX_WINDOW = 366 * DAY
MAX_HOSTS = 2000
"""The most host names one HOSTLIST expands to: written once per window, so that 30 windows
stay well inside a configuration file's 1 MiB."""
_LIMITS = (("MAXJOB", "max_running"), ("MAXPROC", "max_cores"))
_ACL = ("USERLIST", "GROUPLIST", "ACCOUNTLIST", "CLASSLIST", "QOSLIST", "JOBATTRLIST", "TIMELIMIT")
_WINDOW = ("HOSTLIST", "PERIOD", "STARTTIME", "ENDTIME", "DAYS", "DEPTH")
_OWN = {"GROUPCFG", "ACCOUNTCFG", "USERCFG", "CLASSCFG", "SRCFG", "RMCFG"}
_SCALARS = {"FSDEPTH", "FSINTERVAL", "FSDECAY", "RESERVATIONDEPTH", "RMPOLLINTERVAL"}


@dataclass
class Imported:
    """The mysched configuration written, and the notes for standard error (line order)."""

    text: str
    notes: list[str]
    empty: bool = False
    """Nothing was carried over: `text` is comments only."""


@dataclass
class _VO:
    name: str
    groups: list[str] = field(default_factory=list)
    share: float | None = None
    limits: dict[str, int] = field(default_factory=dict)
    source: list[str] = field(default_factory=list)


def _unique(name: str, used: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... if taken: two MAUI names may make one setting name."""
    out, n = name, 1
    while out in used:
        n += 1
        out = f"{name}_{n}"
    used.add(out)
    return out


def setting_name(text: str) -> bool:
    return bool(_SETTING_NAME.match(text))


def _safe(text: str, prefix: str) -> str:
    """A setting name for a name of mysched's own choosing (a VO, a downtime)."""
    out = re.sub(r"[^-A-Za-z0-9_]", "_", text)
    return out if setting_name(out) else f"{prefix}_{out}"


def _str(v: str) -> str:
    return json.dumps(v, ensure_ascii=False)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def _duration(seconds: float) -> str:
    """A duration as the configuration writes it: "2d", "12h", "90m", "3600", "inf"."""
    if math.isinf(seconds):
        return '"inf"'
    for unit, size in (("d", DAY), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and (seconds / size).is_integer():
            return f'"{int(seconds / size)}{unit}"'
    if seconds >= 3600:
        return f'"{seconds / 3600:.4g}h"'
    return _num(round(seconds))


class _Importer:
    """One import: the sections it writes, and its notes by line (alike not-carried ones
    gathered in `skipped`, to be named once)."""

    def __init__(self, mf: MauiFile, now: float, tz: dt.tzinfo | None, vo_map: Mapping[str, str]) -> None:
        self.mf, self.now, self.tz, self.vo_map = mf, now, tz, vo_map
        self.notes: list[tuple[int, str]] = [(n, f"warning: {w}") for n, w in mf.warnings]
        self.skipped: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.used: dict[str, set[str]] = {"vos": set(), "downtimes": set()}

    # notes ---------------------------------------------------------------------------------
    def note(self, line: int, text: str) -> None:
        self.notes.append((line, f"note: {text}"))

    def warn(self, line: int, text: str) -> None:
        self.notes.append((line, f"warning: {text}"))

    def skip(self, line: int, what: str, kind: str, why: str) -> None:
        """`what` (a MAUI line or attribute) is not carried over; alike ones (`kind`) are named once."""
        self.skipped.setdefault((kind, why), []).append((line, what))

    def skip_attr(self, s: Setting, attr: str) -> None:
        value, line = s.attrs[attr]
        what = f"{s.label} {attr}"
        if s.index is not None and s.index.upper() == "DEFAULT":
            key = f"{s.param}[DEFAULT] {attr}"
        else:
            key = f"{s.param}[x] {attr}"
        why = instead(PARAMS, s.param) if s.param == "RMCFG" else instead(ATTRS, key)
        if why == ATTRS[-1][2]:
            self.warn(line, f"{what}: unknown attribute, not carried over")
            return
        family = attr.split("[", 1)[0]
        self.skip(line, f"{what}={clip(value, 60)}", f"{s.param} {family}", why)

    # sections --------------------------------------------------------------------------------
    def run(self) -> str:
        mf = self.mf
        for (param, index), s in mf.settings.items():
            if param in _OWN and index is None:
                self.warn(s.line, f"{param} without [NAME]: not carried over")
                continue
            if param in _SCALARS and index is not None and param != "RESERVATIONDEPTH":
                self.warn(s.line, f"{s.label}: {param} takes no [NAME]; not carried over")
                continue
            if param in _OWN or param in _SCALARS:
                continue
            if not known(param):
                self.warn(s.line, f"{s.label}: unknown MAUI parameter, ignored")
                continue
            shown = s.label + (f" {clip(s.value, 60)}" if s.value else "")
            self.skip(s.line, shown, param, instead(PARAMS, param))
        blocks = [self.scheduler(), self.history(), self.server(), *self.vos_and_groups(), self.queues(),
                  self.users(), self.downtimes()]
        return "\n".join(line for b in blocks for line in b)

    def _int(self, s: Setting, attr: str) -> int | None:
        value, line = s.attrs[attr]
        try:
            v = limit(value)
        except ValueError as exc:
            self.warn(line, f"{s.label} {attr}: {exc}; not carried over")
            return None
        if v is None:
            self.note(line, f"{s.label} {attr}={clip(value, 60)}: no limit in MAUI; none set")
        elif "," in value:
            self.note(line, f"{s.label} {attr}={clip(value, 60)}: the hard limit {v} is set (mysched has one "
                            "limit, no soft one)")
        return v

    def limits(self, s: Setting) -> dict[str, int]:
        """max_running / max_cores of a credential (MAXJOB, MAXPROC)."""
        out = {}
        for attr, key in _LIMITS:
            if attr in s.attrs and (v := self._int(s, attr)) is not None:
                out[key] = v
        return out

    def other_attrs(self, s: Setting, used: tuple[str, ...]) -> None:
        for attr in s.attrs:
            if attr not in used:
                self.skip_attr(s, attr)

    def scheduler(self) -> list[str]:
        body = []
        depth = self.mf.get("RESERVATIONDEPTH") or self.mf.get("RESERVATIONDEPTH", "0")
        for s in self.mf.of("RESERVATIONDEPTH"):
            if s is not depth:
                self.skip(s.line, f"{s.label} {clip(s.value, 60)}", "RESERVATIONDEPTH",
                          "one reservation depth for every job: scheduler.reservation_depth (from RESERVATIONDEPTH)")
        n = self.scalar(depth, int, 0, 1000, "a whole number from 0 to 1000", "not carried over")
        if depth is not None and n is not None:
            body.append(f"  reservation_depth = {n};   # {depth.label} {n} (line {depth.line})")
        poll = self.mf.get("RMPOLLINTERVAL")
        secs = self.scalar(poll, parse_duration, 1, DAY, "a duration from 1 s to a day", "not carried over")
        if poll is not None and secs is not None:
            body.append(f"  interval = {_duration(secs)};   # RMPOLLINTERVAL {poll.value} (line {poll.line})")
            if secs < 5:
                body.append(f"  min_interval = {_duration(secs)};   # at most interval")
        return self.section("scheduler", body)

    def scalar(self, s: Setting | None, conv: Callable[[str], float], lo: float, hi: float, words: str,
               otherwise: str) -> float | None:
        """The value of a ``PARAM VALUE`` line if `conv` reads it and it lies in [lo, hi]; else
        None, and a warning saying what it should be and what happens `otherwise`."""
        if s is None:
            return None
        try:
            v = conv(s.value)
            if not lo <= v <= hi:  # also nan
                raise ValueError
            return v
        except ValueError:
            self.warn(s.line, f"{s.label}: expected {words}, got {clip(s.value)!r}; {otherwise}")
            return None

    @staticmethod
    def section(name: str, body: list[str], head: str = "") -> list[str]:
        if not body:
            return []
        return ([""] + ([f"# {head}"] if head else []) + [f"{name} = {{"] + body + ["};"])

    def history(self) -> list[str]:
        got: dict[str, float] = {}
        where: dict[str, Setting] = {}
        checks = {"FSDEPTH": (int, 1, 1000, "a whole number of windows from 1"),
                  "FSINTERVAL": (parse_duration, 1, MAX_WINDOW, "a duration such as 24:00:00"),
                  "FSDECAY": (float, 1e-9, 1, "a factor above 0, at most 1")}
        for p, (conv, lo, hi, words) in checks.items():
            s = self.mf.get(p)
            v = self.scalar(s, conv, lo, hi, words, "MAUI's default used")
            if s is not None and v is not None:
                got[p], where[p] = v, s
        if not where:
            return []
        depth, interval, decay = got.get("FSDEPTH", 7.0), got.get("FSINTERVAL", DAY), got.get("FSDECAY", 1.0)
        src = ", ".join(f"{p} {where[p].value} (line {where[p].line})" for p in checks if p in where)
        window = depth * interval
        body = []
        if window > MAX_WINDOW:
            self.note(min(s.line for s in where.values()), f"FSDEPTH x FSINTERVAL is {window / DAY:g} days: "
                      "history.window set to mysched's most, a year")
            window = MAX_WINDOW
        body.append(f"  window = {_duration(window)};   # FSDEPTH x FSINTERVAL = {depth:g} x {_duration(interval).strip(chr(34))}")
        half = math.inf if decay >= 1 else interval * math.log(0.5) / math.log(decay)
        body.append(f"  half_life = {_duration(half)};   # FSINTERVAL x ln 0.5 / ln FSDECAY: MAUI weighs window n "
                    f"by FSDECAY^n ({decay:g}), mysched decays continuously")
        rest = "" if len(where) == 3 else ("; MAUI's defaults for the others (FSDEPTH 7, FSINTERVAL 24:00:00, "
                                           "FSDECAY 1)")
        return self.section("history", body, f"fair-share history from {src}{rest}")

    def server(self) -> list[str]:
        chosen: Setting | None = None
        for s in self.mf.of("RMCFG"):
            kind = s.attrs.get("TYPE", ("PBS", s.line))[0].upper()
            if chosen is None and "HOST" in s.attrs and kind.startswith("PBS"):
                chosen = s
                self.other_attrs(s, ("HOST", "TYPE"))
            else:
                self.skip(s.line, s.label, "RMCFG", "mysched talks to one pbs_server: server.url")
        if chosen is None:
            return []
        host, line = chosen.attrs["HOST"]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", host):
            self.warn(line, f"{chosen.label} HOST: not a host name, {clip(host)!r}; not carried over")
            return []
        return self.section("server", [f"  url = {_str('torque://' + host)};   # {chosen.label} HOST={host} "
                                       f"(line {line})"])

    # VOs and groups ------------------------------------------------------------------------------
    def vos_and_groups(self) -> list[list[str]]:
        groups = self._credentials("GROUPCFG")
        accounts = self._credentials("ACCOUNTCFG")
        vos: dict[str, _VO] = {}
        for a, s in accounts.items():
            vo = vos.setdefault(a, _VO(_safe(a, "vo")))
            vo.source.append(f"ACCOUNTCFG[{a}] line {s.line}")
            if "FSTARGET" in s.attrs:
                vo.share = self._target(s)
            vo.limits = self.limits(s)
            self.other_attrs(s, ("FSTARGET", "MAXJOB", "MAXPROC"))

        def vo_of(g: str, line: int) -> str:
            if g in self.vo_map:
                return self.vo_map[g]
            if g in accounts:
                return g
            bases = [b for b in set(accounts) | set(groups) if b != g and len(b) >= 3 and g.startswith(b)]
            if bases:
                base = min(bases, key=len)
                vo = vo_of(base, line)
                self.note(line, f"GROUPCFG[{g}]: in VO {vo} (its name begins with {base}: a pool-account group of "
                                "that VO); --vo-map FILE chooses otherwise")
                return vo
            return g

        targets: dict[str, float] = {}
        glimits: dict[str, tuple[dict[str, int], Setting]] = {}
        for g, s in groups.items():
            try:
                checked_name(g)
            except ValueError as exc:
                self.warn(s.line, f"GROUPCFG[{clip(g)}]: {exc}; not carried over")
                continue
            key = vo_of(g, s.line)
            vo = vos.setdefault(key, _VO(_safe(key, "vo")))
            vo.groups.append(g)
            vo.source.append(f"GROUPCFG[{g}] line {s.line}")
            if "FSTARGET" in s.attrs:
                t = self._target(s)
                if t is not None:
                    targets[g] = t
            lim = self.limits(s)
            if lim:
                glimits[g] = (lim, s)
            self.other_attrs(s, ("FSTARGET", "MAXJOB", "MAXPROC"))
        for g, v in self.vo_map.items():  # groups the map names that maui.cfg has no line for
            vo = vos.setdefault(v, _VO(_safe(v, "vo")))
            if g not in vo.groups and g not in groups:
                vo.groups.append(g)
        weights: dict[str, float] = {}
        for key, vo in vos.items():
            vo.name = _unique(vo.name, self.used["vos"])
            mine = {g: targets[g] for g in vo.groups if g in targets}
            if vo.share is None and mine:
                vo.share = sum(mine.values())
            if len(vo.groups) > 1 and mine and len(set(mine.values())) > 1:
                for g, t in mine.items():
                    if t > 0:
                        weights[g] = t
                    else:
                        self.note(groups[g].line, f"GROUPCFG[{g}] FSTARGET=0: a group's weight in its VO is above 0; "
                                                  "left at 1")
            if not vo.groups:
                vo.groups.append(key)
                self.note(accounts[key].line, f"ACCOUNTCFG[{key}]: mysched knows a job's VO by its unix group, not its "
                                              f"account (qsub -A): VO {vo.name} is given the group {key}; list its "
                                              f"groups under vos.{vo.name}.groups (or --vo-map)")
        self._scale(vos)
        return [self._render_vos(vos), self._render_groups(weights, glimits)]

    def _credentials(self, param: str) -> dict[str, Setting]:
        out = {}
        for s in self.mf.of(param):
            if s.index is not None and s.index.upper() == "DEFAULT":
                for attr in s.attrs:
                    self.skip_attr(s, attr)
            else:
                out[s.index or ""] = s
        return out

    def _target(self, s: Setting) -> float | None:
        value, line = s.attrs["FSTARGET"]
        try:
            t, mark = percent(value)
        except ValueError as exc:
            self.warn(line, f"{s.label} FSTARGET: {exc}; not carried over")
            return None
        if mark in "+-^" and mark:
            what = {"+": "a floor", "-": "a cap", "^": "a bound"}[mark]
            self.note(line, f"{s.label} FSTARGET={value}: {what} in MAUI, taken as the share "
                            "(max_cores caps a VO or group)")
        return t

    def _scale(self, vos: dict[str, _VO]) -> None:
        total = sum(v.share or 0 for v in vos.values())
        if total <= 100:
            return
        factor = 100 / total
        for v in vos.values():
            if v.share:
                v.share = math.floor(v.share * factor * 100) / 100
        first = min((int(src.rsplit(" ", 1)[1]) for v in vos.values() for src in v.source), default=1)
        self.note(first, f"the FSTARGETs of the VOs add up to {total:g} %: mysched's shares are guarantees of at most "
                         f"100 % in all, so each is scaled by {factor:.4g}")

    def _render_vos(self, vos: dict[str, _VO]) -> list[str]:
        body = []
        for vo in vos.values():
            parts = [f"groups = [{', '.join(_str(g) for g in vo.groups)}];"]
            if vo.share is not None:
                parts.append(f"share = {_num(vo.share)};")
            parts += [f"{k} = {v};" for k, v in vo.limits.items()]
            body.append(f"  # {', '.join(vo.source)}")
            body.append(f"  {vo.name} = {{ {' '.join(parts)} }};")
        return self.section("vos", body, "VOs: a share is a guaranteed percentage of the slots in mysched, MAUI's "
                                         "FSTARGET a fair-share target; groups no VO lists belong to default_vo "
                                         "(\"others\": no share, no limits)")

    def _render_groups(self, weights: dict[str, float], glimits: dict[str, tuple[dict[str, int], Setting]]) -> list[str]:
        body = []
        for g in dict.fromkeys([*glimits, *weights]):
            if not setting_name(g):
                line = glimits[g][1].line if g in glimits else 0
                self.warn(line, f"GROUPCFG[{clip(g)}]: not a name a mysched setting can have (letters, digits, - "
                                "and _, a letter first): its limits and weight are not carried over")
                continue
            parts = [f"{k} = {v};" for k, v in glimits.get(g, ({}, None))[0].items()]
            if g in weights:
                parts.append(f"share = {_num(weights[g])};")
            src = f"   # GROUPCFG[{g}] line {glimits[g][1].line}" if g in glimits else "   # its FSTARGET, as a weight"
            body.append(f"  {g} = {{ {' '.join(parts)} }};{src}")
        return self.section("groups", body, "groups: limits, and FSTARGETs as weights among the groups of a VO")

    # queues and users ------------------------------------------------------------------------------
    def queues(self) -> list[str]:
        return self._limit_blocks("CLASSCFG", "queues", "queues (MAUI's classes): max_running, max_cores", None)

    def users(self) -> list[str]:
        default = next((s for s in self.mf.of("USERCFG") if (s.index or "").upper() == "DEFAULT"), None)
        dlim: dict[str, int] = {}
        lines = []
        if default is not None:
            dlim = self.limits(default)
            self.other_attrs(default, ("MAXJOB", "MAXPROC"))
            if dlim:
                lines.append(f"  default = {{ {' '.join(f'{k} = {v};' for k, v in dlim.items())} }};   # "
                             f"USERCFG[DEFAULT] line {default.line}")
        return self.section("users", lines + self._limit_blocks("USERCFG", "", "", dlim),
                            "users (MAUI's USERCFG): a user's own block replaces users.default in mysched")

    def _limit_blocks(self, param: str, section: str, head: str, default: dict[str, int] | None) -> list[str]:
        body = []
        for s in self.mf.of(param):
            if s.index is not None and s.index.upper() == "DEFAULT":
                if param != "USERCFG":
                    for attr in s.attrs:
                        self.skip_attr(s, attr)
                continue
            lim = self.limits(s)
            self.other_attrs(s, ("MAXJOB", "MAXPROC"))
            if not lim:
                continue
            name = s.index or ""
            if not setting_name(name):
                self.warn(s.line, f"{s.label}: not a name a mysched setting can have (letters, digits, - and _, a "
                                  "letter first): not carried over")
                continue
            extra = ""
            if default:
                added = {k: v for k, v in default.items() if k not in lim}
                lim = {**lim, **added}
                if added:
                    extra = f"; {', '.join(added)} from USERCFG[DEFAULT]"
            body.append(f"  {name} = {{ {' '.join(f'{k} = {v};' for k, v in lim.items())} }};   # {s.label} "
                        f"line {s.line}{extra}")
        return self.section(section, body, head) if section else body

    # downtimes ---------------------------------------------------------------------------------------
    def downtimes(self) -> list[str]:
        body = []
        for s in self.mf.of("SRCFG"):
            body += self._downtime(s)
        return self.section("downtimes", body, "scheduled downtimes: SRCFG standing reservations of hosts for no "
                                               "job, as their next windows (mysched's downtimes do not recur: "
                                               "add later ones as they are declared)")

    def _downtime(self, s: Setting) -> list[str]:
        acl = [a for a in s.attrs if a in _ACL]
        if acl:
            self.skip(s.line, f"{s.label} {acl[0]}={clip(s.attrs[acl[0]][0], 60)}", "SRCFG ACL",
                      instead(ATTRS, f"SRCFG[x] {acl[0]}"))
            return []
        period = s.attrs.get("PERIOD", ("DAY", s.line))[0].upper()
        if "HOSTLIST" not in s.attrs or period == "INFINITY":
            why = "PERIOD=INFINITY" if period == "INFINITY" else "TASKCOUNT"
            self.skip(s.line, f"{s.label}" + (" PERIOD=INFINITY" if period == "INFINITY" else " without HOSTLIST"),
                      "SRCFG forever", instead(ATTRS, f"SRCFG[x] {why}"))
            return []
        hosts = self._hosts(s)
        if hosts is None:
            return []
        try:
            windows = self._windows(s, period)
        except ValueError as exc:
            self.warn(s.line, f"{s.label}: {exc}; not carried over")
            return []
        if not windows:
            self.skip(s.line, f"{s.label} (every day, all day)", "SRCFG forever", instead(ATTRS, "SRCFG[x] ALWAYS"))
            return []
        for attr in s.attrs:
            if attr not in _WINDOW:
                self.skip_attr(s, attr)
        base = _safe(s.index or "sr", "sr")
        used = self.used["downtimes"]
        out = [f"  # {s.label} line {s.line}: "
               + " ".join(f"{a}={s.attrs[a][0]}" for a in _WINDOW if a in s.attrs)]
        host_part = f" hosts = [{', '.join(_str(h) for h in hosts)}];" if hosts else ""
        for i, (start, end) in enumerate(windows, 1):
            nm = _unique(base if len(windows) == 1 else f"{base}_{i}", used)
            out.append(f"  {nm} = {{ start = {_str(start.isoformat(timespec='minutes'))}; "
                       f"end = {_str(end.isoformat(timespec='minutes'))};{host_part} }};")
        return out

    def _hosts(self, s: Setting) -> list[str] | None:
        """HOSTLIST as globs ([] for ALL: every node); None when nothing usable is left."""
        value, line = s.attrs["HOSTLIST"]
        out: list[str] = []
        for token in items(value):
            if token.upper() == "ALL":
                return []
            m = re.fullmatch(r"([A-Za-z0-9_.-]*)\[(\d+)-(\d+)\]([A-Za-z0-9_.-]*)", token)
            if m:
                lo, hi = int(m.group(2)), int(m.group(3))
                width = len(m.group(2)) if len(m.group(2)) == len(m.group(3)) else 0
                if hi < lo or hi - lo + len(out) >= MAX_HOSTS:
                    self.warn(line, f"{s.label} HOSTLIST: range {clip(token)} names no hosts or over {MAX_HOSTS}; "
                                    "not carried over")
                    continue
                out += [f"{m.group(1)}{n:0{width}d}{m.group(4)}" for n in range(lo, hi + 1)]
            elif re.fullmatch(r"[A-Za-z0-9_.*?-]+", token):
                out.append(token)
            else:
                self.warn(line, f"{s.label} HOSTLIST: {clip(token)!r} is a host expression mysched cannot read "
                                "(it takes host names and shell globs); not carried over")
        if not out:
            self.warn(line, f"{s.label}: no host left of HOSTLIST; not carried over")
            return None
        return out

    def _windows(self, s: Setting, period: str) -> list[tuple[dt.datetime, dt.datetime]]:
        """The next DEPTH windows of a DAY or WEEK standing reservation (none: it never ends)."""
        if period not in ("DAY", "WEEK"):
            raise ValueError(f"PERIOD {clip(period)!r} is not DAY, WEEK or INFINITY")
        span = DAY if period == "DAY" else WEEK
        start = parse_duration(s.attrs.get("STARTTIME", ("0", 0))[0])
        end = parse_duration(s.attrs.get("ENDTIME", (str(int(span)), 0))[0])
        if start >= span or end > span or math.isinf(end):
            raise ValueError(f"STARTTIME and ENDTIME must lie within the {period.lower()}")
        day_names = [d.upper()[:3] for d in items(s.attrs.get("DAYS", ("ALL", 0))[0])]
        if any(d not in _DAYS and d != "ALL" for d in day_names):
            raise ValueError(f"DAYS {clip(s.attrs['DAYS'][0])!r} is not a list of Mon ... Sun or ALL")
        if period == "WEEK" and "DAYS" in s.attrs:
            self.note(s.attrs["DAYS"][1], f"{s.label} DAYS: a weekly reservation's days are in STARTTIME and ENDTIME "
                                          "(DD:HH:MM:SS from Sunday); ignored")
        days = set(_DAYS.values()) if "ALL" in day_names or period == "WEEK" else {_DAYS[d] for d in day_names}
        if end <= start:
            end += span  # past midnight, or past the week's end
        if end - start >= span and len(days) == 7:
            return []
        depth_text, line = s.attrs.get("DEPTH", ("2", s.line))
        if not re.fullmatch(r"\d{1,6}", depth_text) or not 1 <= int(depth_text) <= 30:
            self.warn(line, f"{s.label} DEPTH: expected a number of windows from 1 to 30, got {clip(depth_text)!r}; "
                            "MAUI's 2 taken")
            depth_text = "2"
        depth = int(depth_text)
        today = dt.datetime.fromtimestamp(self.now, self.tz).date()
        first = today - dt.timedelta(days=(today.weekday() + 1) % 7 if period == "WEEK" else 1)
        step = dt.timedelta(days=7 if period == "WEEK" else 1)
        out = []
        d = first
        while len(out) < depth and d < today + dt.timedelta(days=800):
            if period == "WEEK" or d.weekday() in days:
                midnight = dt.datetime.combine(d, dt.time())
                a, b = (self._aware(midnight + dt.timedelta(seconds=x)) for x in (start, end))
                if b.timestamp() > self.now:
                    out.append((a, b))
            d += step
        return out

    def _aware(self, t: dt.datetime) -> dt.datetime:
        return t.replace(tzinfo=self.tz) if self.tz is not None else t.astimezone()

    def skipped_notes(self) -> list[tuple[int, str]]:
        out = []
        for (_kind, why), seen in self.skipped.items():
            (line, what), rest = seen[0], seen[1:]
            more = ""
            if rest:
                shown = ", ".join(str(n) for n, _ in rest[:10]) + (", ..." if len(rest) > 10 else "")
                more = f" (and {len(rest)} more alike: line{'s' if len(rest) > 1 else ''} {shown})"
            out.append((line, f"{what}: not carried over: {why}{more}"))
        return out


def import_maui(text: str, filename: str, *, now: float, tz: dt.tzinfo | None = None,
                vo_map: Mapping[str, str] | None = None) -> Imported:
    """A mysched configuration from the text of a maui.cfg (`filename` names it in notes).

    `now` and `tz` place a standing reservation's next windows (`tz` None: this machine's
    zone, as MAUI on it reads STARTTIME); `vo_map` (group -> VO) overrides the VO of groups."""
    imp = _Importer(read_maui(text, filename), now, tz, dict(vo_map or {}))
    body = imp.run()
    notes = sorted(imp.notes + imp.skipped_notes(), key=lambda n: n[0])
    head = [f"# mysched configuration imported from {filename} by `mysched import-maui`.",
            "# Each setting names the MAUI line it came from; what could not be carried over, and what",
            "# mysched does instead, went to standard error. Check it with: mysched check-config -c FILE",
            "# (etc/mysched.cfg documents every setting)."]
    empty = not body.strip()
    if empty:
        head.append("# Nothing of the MAUI file could be carried over.")
    return Imported("\n".join(head) + "\n" + body + "\n", [clip(f"{filename}:{n}: {t}", 1000) if n else
                                                   clip(f"{filename}: {t}", 1000) for n, t in notes], empty)
