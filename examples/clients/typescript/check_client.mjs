// Checks client.mjs and client.d.ts against docs/openapi.json: the same routes (method, path,
// operationId), one interface per schema with the schema's properties (required ones not
// optional), and each method taking the route's request schema and returning its answer schema.
//
//     node check_client.mjs OPENAPI_JSON NODE_MODULES_WITH_TYPESCRIPT
// Prints "ok" or the mismatches (exit 1).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { ROUTES, AgentctxClient } from "./client.mjs";

const [openapiPath, modules] = process.argv.slice(2);
const doc = JSON.parse(readFileSync(openapiPath, "utf8"));
const ts = createRequire(modules + "/")("typescript");
const problems = [];
const fail = (m) => problems.push(m);

const typeName = (schema) => (schema === "Error" ? "ErrorBody" : schema);
const refName = (content) => content?.["application/json"]?.schema?.$ref?.split("/").pop();

// The document's routes.
const documented = [];
for (const [path, item] of Object.entries(doc.paths))
  for (const [method, op] of Object.entries(item))
    if (op && op.operationId) {
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const query = params.filter((p) => p.in === "query").map((p) => p.name);
      const ok = Object.entries(op.responses).find(([s]) => s.startsWith("2"));
      documented.push({ operationId: op.operationId, method: method.toUpperCase(), path, query,
        request: refName(op.requestBody?.content), answer: refName(ok?.[1]?.content) });
    }
const key = (r) => `${r.method} ${r.path} ${r.operationId} ?${(r.query ?? []).join(",")}`;
const mine = new Set(ROUTES.map(key));
for (const r of documented) if (!mine.has(key(r))) fail(`route missing from client.mjs ROUTES: ${key(r)}`);
const theirs = new Set(documented.map(key));
for (const r of ROUTES) if (!theirs.has(key(r))) fail(`route in client.mjs but not in the document: ${key(r)}`);
for (const r of documented)
  if (typeof AgentctxClient.prototype[r.operationId] !== "function") fail(`client.mjs lacks method ${r.operationId}`);

// The declarations.
const file = ts.createSourceFile("client.d.ts", readFileSync(new URL("./client.d.ts", import.meta.url), "utf8"),
  ts.ScriptTarget.ES2022, true);
const interfaces = new Map();
let clientClass;
file.forEachChild((node) => {
  if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
  if (ts.isClassDeclaration(node) && node.name?.text === "AgentctxClient") clientClass = node;
});
for (const [name, schema] of Object.entries(doc.components.schemas)) {
  const decl = interfaces.get(typeName(name));
  if (!decl) {
    fail(`client.d.ts lacks interface ${typeName(name)}`);
    continue;
  }
  const members = new Map(decl.members.filter((m) => m.name).map((m) => [m.name.text, m]));
  const required = new Set(schema.required ?? []);
  for (const prop of Object.keys(schema.properties ?? {})) {
    const m = members.get(prop);
    if (!m) fail(`${typeName(name)} lacks ${prop}`);
    else if (required.has(prop) === Boolean(m.questionToken))
      fail(`${typeName(name)}.${prop} is ${m.questionToken ? "optional" : "required"}, the document says otherwise`);
  }
  for (const prop of members.keys())
    if (!(prop in (schema.properties ?? {}))) fail(`${typeName(name)}.${prop} is not in the document`);
}
if (!clientClass) fail("client.d.ts lacks class AgentctxClient");
const methods = new Map((clientClass?.members ?? []).filter(ts.isMethodDeclaration).map((m) => [m.name.text, m]));
for (const r of documented) {
  const m = methods.get(r.operationId);
  if (!m) {
    fail(`client.d.ts AgentctxClient lacks ${r.operationId}`);
    continue;
  }
  const params = m.parameters.map((p) => p.type.getText(file));
  if (r.request && !params.includes(typeName(r.request))) fail(`${r.operationId} does not take ${r.request}`);
  const returns = m.type.getText(file);
  if (r.answer && returns !== `Promise<${typeName(r.answer)}>`) fail(`${r.operationId} returns ${returns}, not ${r.answer}`);
  const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]);
  const names = m.parameters.map((p) => p.name.getText(file));
  for (const p of [...pathParams, ...r.query])
    if (!names.includes(p)) fail(`${r.operationId} lacks parameter ${p}`);
}

// Every declaration file compiles in strict mode.
const declarations = ["client.d.ts", "ai-sdk.d.ts", "openai-agents.d.ts"].map((f) => new URL("./" + f, import.meta.url).pathname);
const program = ts.createProgram(declarations, {
  strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
});
for (const d of ts.getPreEmitDiagnostics(program)) fail(`tsc: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);

if (problems.length) {
  console.log(problems.join("\n"));
  process.exit(1);
}
console.log(`ok: ${documented.length} routes, ${Object.keys(doc.components.schemas).length} schemas`);
