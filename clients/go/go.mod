module sessionary.local/sessionary

go 1.24
