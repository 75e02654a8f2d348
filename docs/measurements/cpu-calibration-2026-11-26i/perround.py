import json, sys
W = sys.argv[1]
for c in ('single-tiny', 'tp2-tiny', 'pp2-tiny', 'tp2pp2-tiny', 'tp2-dp2-tiny', 'layerwise16-tiny'):
    for r in (1, 2, 3):
        o = []
        for v in ('before', 'after'):
            d = json.load(open(f'{W}/out/{v}/{c}-{r}/results.json'))
            o.append(tuple(round(x['modeled'] * 1e3, 4) for x in d['comparison'] if x['metric'] in ('ttft', 'tpot')))
        if o[0] != o[1]: print(W, c, r, 'TTFT, TPOT ms before', o[0], 'after', o[1])
