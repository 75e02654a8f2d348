package claims

import "sort"

func sortStrings(s []string) []string { sort.Strings(s); return s }

func sortJudgements(js []Judgement) {
	sort.Slice(js, func(a, b int) bool { return js[a].Strategy < js[b].Strategy })
}
