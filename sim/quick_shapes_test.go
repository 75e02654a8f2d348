package sim

// allStages is every stage shape the cache has priced, by its whole key:
// what the cache's map of stage costs held before the shapes moved onto
// their layouts' kinds (kindOps.shapes), for the tests that walk them.
func (c *QuickCache) allStages() map[stageKey]*stageCost {
	out := map[stageKey]*stageCost{}
	for pk, kinds := range c.passes {
		for kind, k := range kinds {
			if k == nil {
				continue
			}
			for _, e := range k.shapes {
				out[stageKey{proxyKey: pk, kind: stageKind(kind), layers: e.layers, off: e.off, out: e.out}] = e.sc
			}
		}
	}
	return out
}
