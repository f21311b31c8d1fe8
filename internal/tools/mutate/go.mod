module github.com/zbstream/zbstream/internal/tools/mutate

go 1.26.0
