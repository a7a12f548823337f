// ---------------------------------------------------------------- k6/secrets

// The host answers a secret through vu.env under a reserved name (a NUL first, which no
// -e or [env] name has): host/src/plugin/secrets.rs. Rejections are strings, as k6's
// (`'' + e` reads "no value").
const SECRET_ENV = '\u0000k6-secret\u0000';

function secretSources() {
  return (hostVu.env(`${SECRET_ENV}?`) || '').split(',').filter((s) => s !== '');
}

function secretGet(source, name) {
  return new Promise((resolve, reject) => {
    const key = String(name);
    const value = hostVu.env(`${SECRET_ENV}${source}\u0000${key}`);
    if (value !== null) { resolve(value); return; }
    const sources = secretSources();
    const names = sources.map((s) => s.replace(/\*$/, ''));
    if (sources.length === 0) {
      reject('no secret sources are configured (run with --secret-source file=PATH, or env)');
    } else if (source === '' && !sources[0].endsWith('*')) {
      reject(`no secret source with name "default" is configured: mark one of ${names.join(', ')} default (--secret-source file=name=NAME,filename=PATH,default)`);
    } else if (source !== '' && !names.includes(source)) {
      reject(`no secret source with name "${source}" is configured (sources: ${names.join(', ')})`);
    } else {
      reject(`no value: secret "${key}" is not in secret source "${source || names[0]}"`);
    }
  });
}

const k6secrets = {
  get(name) { return secretGet('', name); },
  source(sourceName) {
    const source = String(sourceName);
    return { get(name) { return secretGet(source, name); } };
  },
};
