package zzdocscheck

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/trnsim/trnsim/configs"
)

func walk(t reflect.Type, path string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		p := path + "." + strings.Split(tag, ",")[0]
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.Field(0).IsExported() {
			fmt.Printf("%s\t(section %s)\n", p, ft.Name())
			walk(ft, p)
			continue
		}
		fmt.Printf("%s\t%s\t%s\n", p, f.Type, f.Tag.Get("check"))
	}
}

func TestFields(t *testing.T) {
	walk(reflect.TypeOf(configs.RunConfig{}), "")
}
