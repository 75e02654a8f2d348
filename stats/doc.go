// Package stats owns partbench's statistics: the one Summary of a sample
// (n, mean, standard deviation, min, percentiles by one percentile function,
// a 95 % interval on the scale the quantity lives on), the one inference for
// a ratio of two samples (Welch's t on log values: its interval and its
// p-value agree), and the one sign of a model's error,
// (modeled − measured) / measured.
//
// It computes and never prints: report renders what it returns. It is a leaf
// (gonum only), so every package that measures can use it.
package stats
