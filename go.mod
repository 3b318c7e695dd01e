module github.com/miniopenclaw/tool

go 1.26
