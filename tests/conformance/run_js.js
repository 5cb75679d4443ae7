// Runs golden fixtures through the official Kaitai Struct JavaScript output.
//
// usage: node run_js.js <job.json>
//
// The job is written by run.py (one loader for fixtures, one reader of the specs):
//   { "build": "<dir with the compiled *.js>",
//     "scalars": { "file::type": ["instance", ...] },   // types with -rdbspec-scalar
//     "params":  { "file::type": ["param", ...] },      // parameter order per type
//     "fixtures": [ { "name", "root", "params", "data" (hex), "expected", "invalid" } ] }
//
// Nothing is compiled here. For every fixture one JSON line is printed:
//   { "name": N, "actual": <plain JSON> }     valid fixture: the parsed object, walked only along
//                                             the paths `expected` names (JS member names, i.e.
//                                             lowerCamelCase); byte arrays become {"hex": ...};
//                                             a -rdbspec-scalar object becomes its first
//                                             non-null instance; absent fields are left out.
//   { "name": N, "raised": "msg" | null }     invalid fixture: what the parse (including every
//                                             lazy instance) threw, or null if it did not throw.
//   { "name": N, "exception": "msg" }         valid fixture that threw.
'use strict';
const fs = require('fs');
const path = require('path');
const Module = require('module');

const here = __dirname;
// The compiled modules require('kaitai-struct/KaitaiStream') and require('RdbLzf').
process.env.NODE_PATH = [path.join(here, 'support'), path.join(here, 'node_modules'), process.env.NODE_PATH]
  .filter(Boolean)
  .join(path.delimiter);
Module._initPaths();

const KaitaiStream = require('kaitai-struct/KaitaiStream');

// Known bug in kaitai-struct 0.11 (JS runtime), not in the specs: readS8be/readS8le negate with
// `x ^ 0xffffffff`, which JavaScript evaluates as a *signed* 32-bit int, so a negative s8 whose low
// word is below 2**31 (e.g. INT64_MIN) comes out 2**32 too large. Upstream fix, unmerged:
// https://github.com/kaitai-io/kaitai_struct_javascript_runtime/pull/16 . Patched here with `>>> 0`
// so that fixtures test the grammar, not this runtime bug. (Beyond 2**53 the JS runtime still
// returns the nearest double; golden.JsonAccessor accepts that.)
function s8(hi, lo) {
  if ((hi & 0x80000000) !== 0) {
    return -(0x100000000 * ((hi ^ 0xffffffff) >>> 0) + ((lo ^ 0xffffffff) >>> 0)) - 1;
  }
  return 0x100000000 * hi + lo;
}
KaitaiStream.prototype.readS8be = function () {
  this.ensureBytesLeft(8);
  const hi = this.readU4be();
  return s8(hi, this.readU4be());
};
KaitaiStream.prototype.readS8le = function () {
  this.ensureBytesLeft(8);
  const lo = this.readU4le();
  return s8(this.readU4le(), lo);
};

function camel(id) {
  return id.split('_').map((p) => p.charAt(0).toUpperCase() + p.slice(1)).join('');
}
function lowerCamel(id) {
  const c = camel(id);
  return c.charAt(0).toLowerCase() + c.slice(1);
}

function main() {
  const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const moduleCache = {};

  function resolve(key) {
    const parts = key.split('::');
    const file = camel(parts[0]);
    if (!(file in moduleCache)) {
      moduleCache[file] = require(path.resolve(job.build, file + '.js'));
    }
    let cls = moduleCache[file][file];
    if (!cls) throw new Error(`${file}.js does not export ${file}`);
    for (const part of parts.slice(1)) {
      const next = cls[camel(part)];
      if (!next) throw new Error(`${key}: no nested type ${camel(part)}`);
      cls = next;
    }
    return cls;
  }

  const scalars = new Map(); // class -> [js instance names]
  for (const [key, instances] of Object.entries(job.scalars)) {
    try {
      scalars.set(resolve(key), instances.map(lowerCamel));
    } catch (e) {
      // the spec did not compile; fixtures rooted there fail when they resolve it
    }
  }

  function isStruct(v) {
    return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) && '_io' in v;
  }

  function scalarize(v) {
    if (v !== null && typeof v === 'object' && scalars.has(v.constructor)) {
      for (const inst of scalars.get(v.constructor)) {
        const x = v[inst];
        if (x !== null && x !== undefined) return x;
      }
      return null;
    }
    return v;
  }

  function isPlainMapping(e) {
    return e !== null && typeof e === 'object' && !Array.isArray(e) && !(Object.keys(e).length === 1 && 'hex' in e);
  }

  function convert(v, expected, where) {
    v = scalarize(v);
    if (v === undefined || v === null) return null;
    if (v instanceof Uint8Array || v instanceof ArrayBuffer) return { hex: Buffer.from(v).toString('hex') };
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return { $float: 'nan' };
      if (!Number.isFinite(v)) return { $float: v > 0 ? 'inf' : '-inf' };
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) return { $float: String(v) };
      return v;
    }
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'string' || typeof v === 'boolean') return v;
    if (Array.isArray(v)) {
      return v.map((item, i) => convert(item, Array.isArray(expected) ? expected[i] : undefined, `${where}[${i}]`));
    }
    if (typeof v === 'object') {
      const out = {};
      if (!isPlainMapping(expected)) {
        out.$object = v.constructor ? v.constructor.name : 'object';
        return out;
      }
      for (const key of Object.keys(expected)) {
        const js = lowerCamel(key);
        const sub = where ? `${where}.${key}` : key;
        if (!(js in v)) continue;
        let value;
        try {
          value = v[js];
        } catch (e) {
          throw new Error(`${sub}: ${describe(e)}`);
        }
        out[js] = convert(value, expected[key], sub);
      }
      return out;
    }
    return String(v);
  }

  // Evaluate every public field and lazy instance (prototype getters), so an invalid input
  // throws even when the failing part is only reached through an instance.
  function touchAll(v, seen) {
    v = scalarize(v);
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) {
      for (const item of v) touchAll(item, seen);
      return;
    }
    if (!isStruct(v)) return;
    const names = new Set(Object.keys(v).filter((k) => !k.startsWith('_')));
    for (let proto = Object.getPrototypeOf(v); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const k of Object.getOwnPropertyNames(proto)) {
        const d = Object.getOwnPropertyDescriptor(proto, k);
        if (!k.startsWith('_') && d && typeof d.get === 'function') names.add(k);
      }
    }
    for (const k of names) touchAll(v[k], seen);
  }

  function describe(e) {
    if (e && e.name && e.message !== undefined) return `${e.name}: ${e.message}`;
    return String(e);
  }

  function toParam(p) {
    if (p !== null && typeof p === 'object' && !Array.isArray(p) && 'hex' in p) {
      return new Uint8Array(Buffer.from(p.hex, 'hex'));
    }
    return p;
  }

  for (const fx of job.fixtures) {
    let line;
    try {
      const cls = resolve(fx.root);
      const order = job.params[fx.root] || [];
      const args = order.map((name) => toParam((fx.params || {})[name]));
      const bytes = new Uint8Array(Buffer.from(fx.data, 'hex'));
      const run = () => new cls(new KaitaiStream(bytes.buffer), null, null, ...args);
      if (fx.invalid) {
        let raised = null;
        try {
          touchAll(run(), new Set());
        } catch (e) {
          raised = describe(e);
        }
        line = { name: fx.name, raised };
      } else {
        let obj;
        try {
          obj = run();
        } catch (e) {
          throw new Error(`parse: ${describe(e)}`);
        }
        line = { name: fx.name, actual: convert(obj, fx.expected, '') };
      }
    } catch (e) {
      line = { name: fx.name, exception: describe(e) };
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
}

main();
