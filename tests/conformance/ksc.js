// Compiles .ksy files with the official Kaitai Struct compiler (npm build).
// usage: node ksc.js <python|javascript> <outdir> <file.ksy>...
'use strict';
const fs = require('fs');
const path = require('path');
const yaml = require('js-yaml');
const compiler = require('kaitai-struct-compiler');

const [lang, outdir, ...files] = process.argv.slice(2);
if (!lang || !outdir || files.length === 0) {
  console.error('usage: node ksc.js <python|javascript> <outdir> <file.ksy>...');
  process.exit(2);
}
fs.mkdirSync(outdir, { recursive: true });

function load(file) {
  return yaml.load(fs.readFileSync(file, 'utf8'));
}

async function compileOne(file) {
  const dir = path.dirname(file);
  const importer = { importYaml: (name) => Promise.resolve(load(path.join(dir, name + '.ksy'))) };
  const outputs = await compiler.compile(lang, load(file), importer, false);
  for (const [name, code] of Object.entries(outputs)) {
    fs.writeFileSync(path.join(outdir, name), code);
  }
  return Object.keys(outputs);
}

(async () => {
  let failed = 0;
  for (const file of files) {
    try {
      const names = await compileOne(file);
      console.log(`ok ${file} -> ${names.join(', ')}`);
    } catch (err) {
      failed += 1;
      console.error(`FAIL ${file}: ${err && err.toString ? err.toString() : err}`);
    }
  }
  process.exit(failed ? 1 : 0);
})();
