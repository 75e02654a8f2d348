package main
import (
 _ "github.com/BurntSushi/toml"
 _ "github.com/olekukonko/tablewriter"
 _ "gonum.org/v1/gonum/stat"
 _ "gonum.org/v1/gonum/blas/blas32"
 _ "gonum.org/v1/plot"
 _ "github.com/spf13/cobra"
 _ "github.com/NVIDIA/go-nvml/pkg/nvml"
 _ "github.com/ianlancetaylor/cgosymbolizer"
 _ "github.com/schollz/progressbar/v3"
 _ "golang.org/x/term"
)
func main(){}
