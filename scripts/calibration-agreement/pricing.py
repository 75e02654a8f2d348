"""What the agreement scripts share: the six configs run.sh runs, the headline of a model
(`partbench model --dry-run --format json`) priced from a profile, and the median p50 of a pass's
runs of a config."""
import glob
import json
import statistics
import subprocess

# CONFIGS maps each config run.sh runs to the --config it is run with (in WORKDIR).
CONFIGS = {'single-tiny': 'test/single-tiny', 'tp2-tiny': 'tp2-tiny.toml', 'pp2-tiny': 'pp2-tiny.toml',
           'tp2pp2-tiny': 'test/tp2pp2-tiny', 'tp2-dp2-tiny': 'test/tp2-dp2-tiny',
           'layerwise16-tiny': 'test/layerwise16-tiny'}


def find(o, k):
    """Every value of key k anywhere in the JSON value o, in document order."""
    if isinstance(o, dict):
        for a, v in o.items():
            if a == k:
                yield v
            yield from find(v, k)
    elif isinstance(o, list):
        for x in o:
            yield from find(x, k)


def model_tps(binary, config, profile, cwd=None):
    """(TTFT, TPOT, TPS) of config priced from profile by binary's `model --dry-run`: s, s, tok/s
    (TPS: the decode's tokens_per_s, as a run's comparison row models it)."""
    out = subprocess.run([binary, 'model', '--dry-run', '--config', config, '--calibration', profile,
                          '--format', 'json'], capture_output=True, text=True, cwd=cwd).stdout
    d = json.loads(out)
    return next(find(d, 'ttft_s')), next(find(d, 'tpot_s')), next(find(d, 'tokens_per_s'))


def model(binary, config, profile, cwd=None):
    """(TTFT, TPOT) in s of config priced from profile by binary's `model --dry-run`."""
    return model_tps(binary, config, profile, cwd)[:2]


def run_medians(files):
    """(median TTFT p50, median TPOT p50, runs) over the results.json files given."""
    mt, mp = [], []
    for f in files:
        for c in json.load(open(f))['comparison']:
            if c['metric'] == 'ttft':
                mt.append(c['measured']['p50'])
            if c['metric'] == 'tpot':
                mp.append(c['measured']['p50'])
    if not mt:
        return None
    return statistics.median(mt), statistics.median(mp), len(mt)


def pass_tps(workdir, name):
    """The median measured TPS p50 of config name's runs in a run.sh pass."""
    v = []
    for f in glob.glob(workdir + '/out/*/%s-*/results.json' % name):
        v += [c['measured']['p50'] for c in json.load(open(f))['comparison'] if c['metric'] == 'tps']
    return statistics.median(v) if v else None


def pass_runs(workdir, name):
    """run_medians of config name's runs in a run.sh pass (out/*/NAME-*/results.json)."""
    return run_medians(glob.glob(workdir + '/out/*/%s-*/results.json' % name))
