module sessionary.local/bench/go_appends

go 1.24

require sessionary.local/sessionary v0.0.0

replace sessionary.local/sessionary => ../../clients/go
