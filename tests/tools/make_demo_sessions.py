#!/usr/bin/env python3
"""Writes the bundled demo sessions (examples/sessions/csv-export-fix.jsonl, pi16-task.jsonl).

Deterministic: run it again and the files come out byte-identical. Usage:
    python3 tests/tools/make_demo_sessions.py [OUTPUT_DIR]   (default: examples/sessions)
"""
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}


class Session:
    """Builds one Pi v3 JSONL session: header, parentId chain, ISO timestamps, usage that grows."""

    def __init__(self, seed, session_id, start):
        self.rng = random.Random(seed)
        self.t = start
        self.lines = []
        self.leaf = None
        self.context_chars = 9000  # the system prompt
        self.calls = 0
        self.write({"type": "session", "version": 3, "id": session_id, "timestamp": self.iso(), "cwd": "/home/dev/inventory-app"})

    def iso(self):
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"

    def ms(self):
        return int(self.t.timestamp() * 1000)

    def tick(self, lo=0.4, hi=6.0):
        self.t += timedelta(milliseconds=int(self.rng.uniform(lo, hi) * 1000))

    def new_id(self):
        return f"{self.rng.getrandbits(32):08x}"

    def write(self, obj):
        self.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))

    def entry(self, type_, fields):
        self.tick()
        e = {"type": type_, "id": self.new_id(), "parentId": self.leaf, "timestamp": self.iso()}
        e.update(fields)
        self.write(e)
        self.leaf = e["id"]
        return e["id"]

    def message(self, msg):
        msg.setdefault("timestamp", None)
        self.tick()
        msg["timestamp"] = self.ms()
        self.t -= timedelta(milliseconds=1)  # the entry timestamp follows the message's
        self.context_chars += len(json.dumps(msg.get("content", "")))
        return self.entry("message", {"message": msg})

    def usage(self, output):
        inp = self.context_chars // 4
        cached = inp - self.rng.randint(200, 900) if inp > 2000 else 0
        cost_in, cost_out, cost_cache = (inp - cached) * 3e-6, output * 15e-6, cached * 3e-7
        return {"input": inp - cached, "output": output, "cacheRead": cached, "cacheWrite": 0,
                "totalTokens": inp + output,
                "cost": {"input": round(cost_in, 6), "output": round(cost_out, 6), "cacheRead": round(cost_cache, 6),
                         "cacheWrite": 0, "total": round(cost_in + cost_out + cost_cache, 6)}}

    def user(self, text):
        return self.message({"role": "user", "content": text})

    def assistant(self, blocks, stop):
        out = sum(len(json.dumps(b)) for b in blocks) // 4 + 20
        msg = {"role": "assistant", "content": blocks, **MODEL, "usage": self.usage(out), "stopReason": stop}
        return self.message(msg)

    def say(self, text):
        return self.assistant([{"type": "text", "text": text}], "stop")

    def tool(self, name, args, result, error=False, text=None, thinking=None):
        """One tool round: an assistant message with the call, then its toolResult."""
        self.calls += 1
        call_id = f"toolu_{self.rng.getrandbits(64):016x}"
        blocks = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "thinkingSignature": f"sig{self.calls}"})
        if text:
            blocks.append({"type": "text", "text": text})
        blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        self.assistant(blocks, "toolUse")
        self.tick(0.1, 3.0)
        return self.message({"role": "toolResult", "toolCallId": call_id, "toolName": name,
                             "content": [{"type": "text", "text": result}], "isError": error})

    def save(self, path):
        Path(path).write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return len(self.lines)


def ts_module(name, body_lines):
    header = [f"// {name}", "import { Row, Column } from '../model/types';", ""]
    return "\n".join(header + body_lines) + "\n"


CSV_OLD = ts_module("src/export/csv.ts: CSV export of inventory rows", [
    "export interface CsvOptions {",
    "  delimiter?: string;",
    "  header?: boolean;",
    "}",
    "",
    "export function splitLine(line: string, delimiter = ','): string[] {",
    "  return line.split(delimiter).map((f) => f.trim());",
    "}",
    "",
    "export function exportCsv(rows: Row[], columns: Column[], options: CsvOptions = {}): string {",
    "  const delimiter = options.delimiter ?? ',';",
    "  const lines = rows.map((r) => columns.map((c) => quote(String(r[c.key] ?? ''), delimiter)).join(delimiter));",
    "  if (options.header !== false) lines.unshift(columns.map((c) => c.title).join(delimiter));",
    "  return lines.join('\\r\\n');",
    "}",
    "",
    "export function roundTrip(text: string): string[][] {",
    "  return text.split('\\r\\n').filter((l) => l.length > 0).map((l) => splitLine(l));",
    "}",
    "",
    "function quote(field: string, delimiter: string): string {",
    "  return field.includes(delimiter) || field.includes('\"') ? '\"' + field.replace(/\"/g, '\"\"') + '\"' : field;",
    "}",
])

REPORTS = ["stock-levels", "reorder", "suppliers", "valuation", "movements", "audit", "shrinkage", "returns",
           "warehouses", "expiry", "pricing", "categories"]


def report_source(name):
    fn = "".join(p.capitalize() for p in name.split("-"))
    return ts_module(f"src/reports/{name}.ts", [
        "import { exportCsv } from '../export/csv';",
        "",
        f"export function build{fn}Report(rows: Row[]): string {{",
        f"  const columns: Column[] = [{{ key: 'sku', title: 'SKU' }}, {{ key: 'name', title: 'Name' }}];",
        "  return exportCsv(rows, columns, { header: true });",
        "}",
        "",
    ] + [line for i in range(1, 9) for line in (
        f"export function {name.replace('-', '_')}_column{i}(row: Row): string {{",
        f"  const value = row['field{i}'];",
        "  if (value === null || value === undefined) return '';",
        f"  return typeof value === 'number' ? value.toFixed({i % 3}) : String(value).trim();",
        "}",
        "",
    )])


EARLIER_SUMMARY = """## Goal
Fix the CSV export in src/export/csv.ts: rows whose fields contain a quoted comma are dropped or split when the export is read back.

## Constraints & Preferences
- Keep the public exportCsv() signature unchanged.
- Do not add new dependencies.

## Progress
### Done
- [x] Inspected src/export/csv.ts, src/model/types.ts, tests/export/csv.test.ts and package.json
- [x] Added a failing round-trip test for a quoted comma to tests/export/csv.test.ts

### In Progress
- [ ] Find why roundTrip() returns two rows instead of three

### Blocked
- (none)

## Key Decisions
- **Reproduce with a round-trip test first**: the existing tests only cover exportCsv() output

## Next Steps
1. Fix splitLine() in src/export/csv.ts so quoted delimiters stay inside one field.
2. Run `npm test -- tests/export/csv.test.ts` until it passes.

## Critical Context
- Failing test: `round-trips a quoted comma` (Expected 3 rows, received 2)
- Command: `npm test -- tests/export/csv.test.ts`

<read-files>
package.json
src/export/csv.ts
src/model/types.ts
tests/export/csv.test.ts
</read-files>

<modified-files>
tests/export/csv.test.ts
</modified-files>"""


def csv_session(out_dir):
    s = Session(1301, "019c2b7e-4a10-7d2e-9b3c-5e8f0a1d2c13", datetime(2026, 11, 24, 9, 12, 0, tzinfo=timezone.utc))
    s.entry("model_change", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    s.entry("thinking_level_change", {"thinkingLevel": "medium"})
    s.user("/mode")
    s.say("Mode set to coding. What should I work on?")
    s.user("The CSV export in src/export/csv.ts drops rows when a field contains a quoted comma, e.g. a product named "
           "\"Bolt, M6\". Please fix it. Keep the public exportCsv() signature unchanged and do not add new dependencies.")
    s.tool("bash", {"command": "ls src src/export tests/export"},
           "src:\nexport\nimport\nmodel\nreports\nserver.ts\n\nsrc/export:\ncsv.ts\nindex.ts\n\ntests/export:\ncsv.test.ts",
           text="I'll look at the export module and its tests first.")
    s.tool("read", {"path": "package.json"},
           '{\n  "name": "inventory-app",\n  "scripts": {\n    "test": "vitest run",\n    "lint": "eslint src tests"\n  },\n'
           '  "devDependencies": {\n    "vitest": "^2.1.0",\n    "eslint": "^9.9.0"\n  }\n}')
    s.tool("read", {"path": "src/export/csv.ts"}, CSV_OLD)
    s.tool("read", {"path": "src/model/types.ts"},
           "export type Row = Record<string, string | number | null>;\nexport interface Column {\n  key: string;\n  title: string;\n}\n")
    s.tool("read", {"path": "tests/export/csv.test.ts"},
           "import { describe, expect, it } from 'vitest';\nimport { exportCsv, roundTrip } from '../../src/export/csv';\n\n"
           "describe('exportCsv', () => {\n  it('writes a header row', () => {\n    expect(exportCsv([], [{ key: 'sku', title: 'SKU' }])).toBe('SKU');\n  });\n});\n")
    s.tool("read", {"path": "src/export/index.ts"}, "export { exportCsv, roundTrip } from './csv';\n")
    s.tool("bash", {"command": "git log --oneline -5 -- src/export"},
           "4f1c2e9 export: add header option\n9a7d310 export: first CSV export\n")
    s.tool("read", {"path": "tests/import/reader.test.ts"},
           "import { describe, expect, it } from 'vitest';\nimport { readRows } from '../../src/import/reader';\n\n"
           "describe('readRows', () => {\n  it('reads two rows', () => {\n    expect(readRows('a,b\\nc,d')).toHaveLength(2);\n  });\n});\n")
    s.tool("bash", {"command": "find src -name \"*.ts\" | wc -l"}, "31")
    s.tool("bash", {"command": "grep -rn \"exportCsv(\" src | head -20"},
           "\n".join(f"src/reports/{r}.ts:7:  return exportCsv(rows, columns, {{ header: true }});" for r in REPORTS[:8]))
    s.tool("bash", {"command": "npm test -- tests/export/csv.test.ts"},
           " RUN  v2.1.4 /home/dev/inventory-app\n\n ✓ tests/export/csv.test.ts (1)\n\n Test Files  1 passed (1)\n      Tests  1 passed (1)\n   Duration  412ms")
    s.tool("edit", {"path": "tests/export/csv.test.ts",
                    "oldText": "});\n});\n",
                    "newText": "});\n\n  it('round-trips a quoted comma', () => {\n    const rows = [{ sku: 'B-6', name: 'Bolt, M6' }, "
                               "{ sku: 'N-6', name: 'Nut \"M6\"' }];\n    const text = exportCsv(rows, [{ key: 'sku', title: 'SKU' }, "
                               "{ key: 'name', title: 'Name' }]);\n    expect(roundTrip(text)).toHaveLength(3);\n  });\n});\n"},
           "Successfully replaced text in tests/export/csv.test.ts.",
           text="The existing test only checks the header, so I'll add a round-trip test that reproduces the bug.")
    s.tool("bash", {"command": "npm test -- tests/export/csv.test.ts"},
           " RUN  v2.1.4 /home/dev/inventory-app\n\n ❯ tests/export/csv.test.ts (2)\n   ✓ writes a header row\n   × round-trips a quoted comma\n\n"
           " FAIL  tests/export/csv.test.ts > exportCsv > round-trips a quoted comma\n"
           "AssertionError: expected [ [ 'SKU', 'Name' ], …(1) ] to have a length of 3 but got 2\n"
           " ❯ tests/export/csv.test.ts:12:28\n\n Test Files  1 failed (1)\n      Tests  1 failed | 1 passed (2)\nCommand exited with code 1", error=True)
    kept = s.say("The new test fails as expected: roundTrip() returns two rows instead of three, so a quoted comma splits a row.")
    # An earlier compaction: everything before `kept` was summarized.
    s.entry("compaction", {"summary": EARLIER_SUMMARY, "firstKeptEntryId": kept, "tokensBefore": s.context_chars // 4,
                           "details": {"readFiles": ["package.json", "src/export/csv.ts", "src/model/types.ts", "tests/export/csv.test.ts"],
                                       "modifiedFiles": ["tests/export/csv.test.ts"]}, "fromHook": False})
    s.context_chars = 9000 + len(EARLIER_SUMMARY) + 400
    phase_two(s)
    return s.save(out_dir / "csv-export-fix.jsonl")


TOKENIZER = """// src/export/tokenize.ts: splits one CSV line into fields, honouring quotes and doubled quotes.
export function tokenize(line: string, delimiter = ','): string[] {
  const fields: string[] = [];
  let field = '';
  let inQuotes = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inQuotes && c === '"' && line[i + 1] === '"') { field += '"'; i++; }
    else if (c === '"') inQuotes = !inQuotes;
    else if (c === delimiter && !inQuotes) { fields.push(field); field = ''; }
    else field += c;
  }
  fields.push(field);
  return fields;
}
"""


def phase_two(s):
    s.tool("bash", {"command": "grep -n \"split\" src/export/csv.ts src/import/reader.ts"},
           "src/export/csv.ts:6:export function splitLine(line: string, delimiter = ','): string[] {\n"
           "src/export/csv.ts:7:  return line.split(delimiter).map((f) => f.trim());\n"
           "src/import/reader.ts:14:  return text.split('\\n').map((l) => l.split(','));",
           thinking="splitLine uses String.split, which ignores quotes. The importer has the same pattern.")
    s.tool("read", {"path": "src/import/reader.ts"},
           "// src/import/reader.ts: reads supplier CSV uploads\nexport function readRows(text: string): string[][] {\n"
           "  return text.split('\\n').map((l) => l.split(','));\n}\n")
    s.say("splitLine() uses line.split(','), which ignores quotes. I'll use a small state-machine tokenizer instead of a regex, "
          "because a regex cannot handle doubled quotes inside a quoted field. I'll share it with src/import/reader.ts too.")
    s.tool("edit", {"path": "src/export/csv.ts",
                    "oldText": "  return line.split(delimiter).map((f) => f.trim());",
                    "newText": "  const fields: string[] = [];\n  let field = '';\n  let inQuotes = false;\n  for (const c of line) {\n"
                               "    if (c === '\"') inQuotes = !inQuotes;\n    else if (c === delimiter && !inQuotes) { fields.push(field); field = ''; }\n"
                               "    else field += c;\n  }\n  return fields.map((f) => f.trim());"},
           "Successfully replaced text in src/export/csv.ts.",
           text="Replacing the split with a quote-aware loop in splitLine().")
    s.tool("edit", {"path": "src/import/reader.ts",
                    "oldText": "l.split(',')", "newText": "splitLine(l)"},
           "Successfully replaced text in src/import/reader.ts.",
           text="Using the same splitter in the importer.")
    s.tool("bash", {"command": "npm test -- tests/export/csv.test.ts"},
           " FAIL  tests/export/csv.test.ts > exportCsv > round-trips a quoted comma\n"
           "TypeError: Cannot read properties of undefined (reading 'trim')\n ❯ splitLine src/export/csv.ts:14:25\n"
           " ❯ tests/export/csv.test.ts:12:28\n\n Test Files  1 failed (1)\n      Tests  1 failed | 1 passed (2)\nCommand exited with code 1",
           error=True)
    s.tool("read", {"path": "src/export/csv.ts", "offset": 6, "limit": 14},
           "6: export function splitLine(line: string, delimiter = ','): string[] {\n7:   const fields: string[] = [];\n"
           "8:   let field = '';\n9:   let inQuotes = false;\n10:   for (const c of line) {\n14:   return fields.map((f) => f.trim());",
           text="The loop never pushes the last field, so fields has a hole at the end.")
    s.tool("edit", {"path": "src/export/csv.ts",
                    "oldText": "  return fields.map((f) => f.trim());",
                    "newText": "  fields.push(field);\n  return fields.map((f) => f.trim());"},
           "Successfully replaced text in src/export/csv.ts.",
           text="Pushing the last field after the loop.")
    s.tool("bash", {"command": "npm test -- tests/export/csv.test.ts"},
           " ✓ tests/export/csv.test.ts (2)\n\n Test Files  1 passed (1)\n      Tests  2 passed (2)\n   Duration  398ms")
    s.user("Wait, don't touch the parser in src/import/ at all: the importer has its own ticket. Only the export path should change. "
           "Also please keep the tokenizer in its own file, src/export/tokenize.ts, with its own tests.")
    s.say("Understood. I'll revert src/import/reader.ts and move the tokenizer into src/export/tokenize.ts, "
          "with tests in tests/export/tokenize.test.ts.")
    s.tool("bash", {"command": "git checkout -- src/import/reader.ts && git status --short"},
           " M src/export/csv.ts\n M tests/export/csv.test.ts")
    s.tool("write", {"path": "src/export/tokenize.ts", "content": TOKENIZER},
           f"Successfully wrote {len(TOKENIZER)} bytes to src/export/tokenize.ts",
           text="Writing the tokenizer, now with doubled-quote handling.")
    s.tool("edit", {"path": "src/export/csv.ts",
                    "oldText": "export function splitLine(line: string, delimiter = ','): string[] {",
                    "newText": "import { tokenize } from './tokenize';\n\nexport function splitLine(line: string, delimiter = ','): string[] {\n"
                               "  return tokenize(line, delimiter).map((f) => f.trim());\n}\n\nfunction unusedOldSplit(line: string, delimiter = ','): string[] {"},
           "Successfully replaced text in src/export/csv.ts.",
           text="Pointing splitLine() at the new tokenizer.")
    s.tool("write", {"path": "tests/export/tokenize.test.ts",
                     "content": "import { describe, expect, it } from 'vitest';\nimport { tokenize } from '../../src/export/tokenize';\n\n"
                                "describe('tokenize', () => {\n  it('keeps a quoted comma', () => {\n"
                                "    expect(tokenize('B-6,\"Bolt, M6\"')).toEqual(['B-6', 'Bolt, M6']);\n  });\n"
                                "  it('unescapes doubled quotes', () => {\n    expect(tokenize('\"Nut \"\"M6\"\"\"')).toEqual(['Nut \"M6\"']);\n  });\n});\n"},
           "Successfully wrote 402 bytes to tests/export/tokenize.test.ts",
           text="Adding tests for the tokenizer.")
    s.tool("bash", {"command": "npm test"},
           " ✓ tests/export/tokenize.test.ts (2)\n ✓ tests/export/csv.test.ts (2)\n ✓ tests/import/reader.test.ts (5)\n"
           " ✓ tests/reports/reports.test.ts (39)\n\n Test Files  4 passed (4)\n      Tests  48 passed (48)\n   Duration  1.92s")
    s.tool("bash", {"command": "npm run lint"},
           "> inventory-app@1.4.0 lint\n> eslint src tests\n\n/home/dev/inventory-app/src/export/csv.ts\n"
           "  17:10  error  'unusedOldSplit' is defined but never used  @typescript-eslint/no-unused-vars\n\n"
           "✖ 1 problem (1 error, 0 warnings)\nCommand exited with code 1", error=True)
    s.say("We decided to delete the old loop rather than keep it as a fallback, since the tokenizer covers every case it handled.")
    s.tool("edit", {"path": "src/export/csv.ts",
                    "oldText": "function unusedOldSplit(line: string, delimiter = ','): string[] {",
                    "newText": "// (old split loop removed)\nfunction removed(): void {"},
           "Successfully replaced text in src/export/csv.ts.",
           text="Removing the unused old loop.")
    s.tool("bash", {"command": "npm run lint"}, "> inventory-app@1.4.0 lint\n> eslint src tests\n")
    audit_reports(s)
    finish(s)


def audit_reports(s):
    s.say("Lint is clean. Next, I'll check that every report that calls exportCsv() still gets the same header row.")
    for r in REPORTS:
        s.tool("read", {"path": f"src/reports/{r}.ts"}, report_source(r))
    for r in REPORTS:
        s.tool("bash", {"command": f"grep -n \"header\" src/reports/{r}.ts"}, f"7:  return exportCsv(rows, columns, {{ header: true }});")
    for r in REPORTS:
        s.tool("bash", {"command": f"npm test -- tests/reports/{r}.test.ts"},
               f" ✓ tests/reports/{r}.test.ts (3)\n\n Test Files  1 passed (1)\n      Tests  3 passed (3)\n   Duration  2{len(r)}0ms")
    s.tool("bash", {"command": "npm test -- tests/reports"},
           " ✓ tests/reports/reports.test.ts (39)\n\n Test Files  1 passed (1)\n      Tests  39 passed (39)")
    s.say("All 12 reports pass their header through unchanged and the report tests pass.")


def finish(s):
    s.user("Looks good. Next, add a CHANGELOG entry, and make quoted fields that contain a CRLF line break survive the round trip too.")
    s.say("Going with a CRLF test first so the change is driven by a failing case.\n"
          "1. Add the CHANGELOG entry under 1.4.1.\n2. Add a round-trip test with a CRLF inside a quoted field.\n"
          "3. Make roundTrip() split records with the tokenizer instead of text.split().")
    s.tool("read", {"path": "CHANGELOG.md"}, "# Changelog\n\n## 1.4.0\n- Supplier reports.\n")
    s.tool("edit", {"path": "CHANGELOG.md", "oldText": "# Changelog\n\n",
                    "newText": "# Changelog\n\n## 1.4.1\n- CSV export: fields with quoted commas and doubled quotes round-trip.\n\n"},
           "Successfully replaced text in CHANGELOG.md.", text="Adding the 1.4.1 entry.")
    s.tool("edit", {"path": "tests/export/csv.test.ts", "oldText": "});\n});\n",
                    "newText": "});\n\n  it('round-trips a CRLF inside a quoted field', () => {\n"
                               "    const rows = [{ sku: 'L-1', name: 'Label\\r\\nsecond line' }];\n"
                               "    expect(roundTrip(exportCsv(rows, [{ key: 'name', title: 'Name' }]))).toHaveLength(2);\n  });\n});\n"},
           "Successfully replaced text in tests/export/csv.test.ts.", text="Adding the CRLF round-trip test.")
    s.tool("bash", {"command": "npm test -- tests/export/csv.test.ts"},
           " FAIL  tests/export/csv.test.ts > exportCsv > round-trips a CRLF inside a quoted field\n"
           "AssertionError: expected [ [ 'Name' ], [ 'Label' ], …(1) ] to have a length of 2 but got 3\n"
           " ❯ tests/export/csv.test.ts:19:60\n\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (5)\nCommand exited with code 1",
           error=True)
    s.say("The CRLF test fails as expected: roundTrip() splits records on every CRLF, even inside quotes. "
          "Next, I will make roundTrip() walk the text with the tokenizer so quoted line breaks stay in one record.")


def pi16_session(out_dir):
    s = Session(1602, "019c3d10-8e21-7f44-a0b5-7c6d5e4f3a21", datetime(2026, 11, 25, 14, 30, 0, tzinfo=timezone.utc))
    s.entry("model_change", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    tools = [{"name": n, "description": d, "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
             for n, d in [("read", "Read a file"), ("edit", "Edit a file"), ("write", "Write a file")]]
    tools.append({"name": "bash", "description": "Run a shell command",
                  "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}})
    s.message({"role": "system", "content": "", "sections": {
        "preamble": "You are an expert coding assistant working in the user's repository.",
        "tools": "<tools>\n- read, edit, write, bash\n</tools>", "cwd": "<cwd>\n/home/dev/inventory-app\n</cwd>"},
        "toolsAdded": tools})
    s.user("Add a --json flag to the `report` command in src/cli/report.ts that prints the rows as a JSON array. "
           "The default output must stay CSV.")
    s.tool("read", {"path": "src/cli/report.ts"},
           "// src/cli/report.ts\nimport { buildStockLevelsReport } from '../reports/stock-levels';\n\n"
           "export function report(args: string[], rows: Row[]): string {\n  return buildStockLevelsReport(rows);\n}\n")
    big = s.tool("bash", {"command": "npm test -- tests/cli"}, "\n".join(f" ✓ tests/cli/case{i}.test.ts (1)" for i in range(120)) +
                 "\n\n Test Files  120 passed (120)")
    s.entry("context_edit", {"targetId": big, "replacement": None})
    s.say("I'll use a separate formatter function instead of branching inside the CSV builder, so the CSV path stays untouched.")
    s.tool("edit", {"path": "src/cli/report.ts",
                    "oldText": "  return buildStockLevelsReport(rows);",
                    "newText": "  if (args.includes('--json')) return JSON.stringify(rows, null, 2);\n  return buildStockLevelsReport(rows);"},
           "Successfully replaced text in src/cli/report.ts.", text="Adding the --json branch.")
    s.message({"role": "system", "content": "", "sections": {"skills": "<skills>\n- vitest: run and debug tests\n</skills>"},
               "toolsAdded": [{"name": "grep", "description": "Search files",
                               "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}}}]})
    s.tool("bash", {"command": "npm test -- tests/cli/report.test.ts"},
           " FAIL  tests/cli/report.test.ts > report > prints JSON with --json\n"
           "AssertionError: expected the output to be one line, got 14 lines\nCommand exited with code 1", error=True)
    s.user("Please print compact JSON, one line, no indentation.")
    s.tool("edit", {"path": "src/cli/report.ts", "oldText": "JSON.stringify(rows, null, 2)", "newText": "JSON.stringify(rows)"},
           "Successfully replaced text in src/cli/report.ts.", text="Switching to compact JSON.")
    s.tool("bash", {"command": "npm test -- tests/cli/report.test.ts"}, " ✓ tests/cli/report.test.ts (3)\n\n Test Files  1 passed (1)")
    for i in range(1, 13):
        body = "".join(f"  it('case {i}.{k}', () => {{\n    expect(report(['--json'], rows{k})).toBe(expected{k});\n  }});\n" for k in range(12))
        s.tool("read", {"path": f"tests/cli/case{i}.test.ts"},
               f"import {{ report }} from '../../src/cli/report';\n\ndescribe('case {i}', () => {{\n{body}}});\n")
    s.say("The --json flag works and the CSV default is unchanged. Next, I will document the flag in README.md.")
    return s.save(out_dir / "pi16-task.jsonl")


def main():
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "examples" / "sessions"
    for name, n in (("csv-export-fix.jsonl", csv_session(out_dir)), ("pi16-task.jsonl", pi16_session(out_dir))):
        print(f"{out_dir / name}: {n} lines")


if __name__ == "__main__":
    main()
