cuda_tile.module @matmul_module {
  entry @static_persistent_matmul_kernel_entry(%0: tile<ptr<f16>>, %1: tile<i32>, %2: tile<i32>, %3: tile<i32>, %4: tile<i32>, %5: tile<ptr<f16>>, %6: tile<i32>, %7: tile<i32>, %8: tile<i32>, %9: tile<i32>, %10: tile<ptr<f16>>, %11: tile<i32>, %12: tile<i32>, %13: tile<i32>, %14: tile<i32>, %15: tile<i32>, %16: tile<i32>, %17: tile<i32>) optimization_hints = #cuda_tile.optimization_hints<sm_90 = {num_cta_in_cga = 4, occupancy = 1}> {
    %18 = constant <i32: 128> : tile<i32>
    %19 = constant <i32: 512> : tile<i32>
    %20 = constant <i32: 64> : tile<i32>
    %21 = constant <i32: 8> : tile<i32>
    %22 = constant <i32: 0> : tile<i32>
    %23 = assume bounded<0, ?>, %1 : tile<i32>
    %24 = assume div_by<16>, %23 : tile<i32>
    %25 = assume bounded<0, ?>, %2 : tile<i32>
    %26 = assume div_by<16>, %25 : tile<i32>
    %27 = assume bounded<0, ?>, %3 : tile<i32>
    %28 = assume div_by<16>, %27 : tile<i32>
    %29 = make_token : token
    %30 = assume div_by<16>, %0 : tile<ptr<f16>>
    %31 = make_tensor_view %30, shape = [%24, %26], strides = [%28, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %32 = assume bounded<0, ?>, %6 : tile<i32>
    %33 = assume div_by<16>, %32 : tile<i32>
    %34 = assume bounded<0, ?>, %7 : tile<i32>
    %35 = assume div_by<16>, %34 : tile<i32>
    %36 = assume bounded<0, ?>, %8 : tile<i32>
    %37 = assume div_by<16>, %36 : tile<i32>
    %38 = make_token : token
    %39 = assume div_by<16>, %5 : tile<ptr<f16>>
    %40 = make_tensor_view %39, shape = [%33, %35], strides = [%37, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %41 = assume bounded<0, ?>, %11 : tile<i32>
    %42 = assume div_by<16>, %41 : tile<i32>
    %43 = assume bounded<0, ?>, %12 : tile<i32>
    %44 = assume div_by<16>, %43 : tile<i32>
    %45 = assume bounded<0, ?>, %13 : tile<i32>
    %46 = assume div_by<16>, %45 : tile<i32>
    %47 = make_token : token
    %48 = make_tensor_view %10, shape = [%42, %44], strides = [%46, 1] : tile<i32> -> tensor_view<?x?xf16, strides=[?,1]>
    %49 = assume div_by<16>, %15 : tile<i32>
    %50 = assume div_by<16>, %16 : tile<i32>
    %51 = assume div_by<16>, %17 : tile<i32>
    %52 = constant <i32: 128> : tile<i32>
    %53 = constant <i32: 512> : tile<i32>
    %54 = constant <i32: 64> : tile<i32>
    %55 = constant <i32: 8> : tile<i32>
    %56 = constant <i32: 0> : tile<i32>
    %57 = addi %49, %52 : tile<i32>
    %58 = constant <i32: 1> : tile<i32>
    %59 = subi %57, %58 : tile<i32>
    %60 = divi %59, %52 signed rounding negative_inf : tile<i32>
    %61 = addi %50, %53 : tile<i32>
    %62 = constant <i32: 1> : tile<i32>
    %63 = subi %61, %62 : tile<i32>
    %64 = divi %63, %53 signed rounding negative_inf : tile<i32>
    %65 = addi %51, %54 : tile<i32>
    %66 = constant <i32: 1> : tile<i32>
    %67 = subi %65, %66 : tile<i32>
    %68 = divi %67, %54 signed rounding negative_inf : tile<i32>
    %69 = muli %60, %64 : tile<i32>
    %70, %71, %72 = get_tile_block_id : tile<i32>
    %73 = assume bounded<0, ?>, %70 : tile<i32>
    %74 = assume bounded<0, ?>, %71 : tile<i32>
    %75 = assume bounded<0, ?>, %72 : tile<i32>
    %76, %77, %78 = get_num_tile_blocks : tile<i32>
    %79 = assume bounded<0, ?>, %76 : tile<i32>
    %80 = assume bounded<0, ?>, %77 : tile<i32>
    %81 = assume bounded<0, ?>, %78 : tile<i32>
    %82 = muli %55, %64 : tile<i32>
    %83 = constant <i32: 128> : tile<i32>
    %84 = constant <i32: 64> : tile<i32>
    %85 = constant <i32: -1> : tile<i32>
    %86 = constant <i32: -1> : tile<i32>
    %87 = constant <i32: -1> : tile<i32>
    %88 = constant <i32: -1> : tile<i32>
    %89 = make_partition_view %31 : partition_view<tile=(128x64), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
    %90 = constant <i32: 64> : tile<i32>
    %91 = constant <i32: 512> : tile<i32>
    %92 = constant <i32: -1> : tile<i32>
    %93 = constant <i32: -1> : tile<i32>
    %94 = constant <i32: -1> : tile<i32>
    %95 = constant <i32: -1> : tile<i32>
    %96 = make_partition_view %40 : partition_view<tile=(64x512), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
    %97 = constant <i32: 128> : tile<i32>
    %98 = constant <i32: 512> : tile<i32>
    %99 = constant <i32: -1> : tile<i32>
    %100 = constant <i32: -1> : tile<i32>
    %101 = make_partition_view %48 : partition_view<tile=(128x512), tensor_view<?x?xf16, strides=[?,1]>>
    for %102 in (%73 to %69, step %79) : tile<i32> {
      %103 = divi %102, %82 signed rounding negative_inf : tile<i32>
      %104 = muli %103, %55 : tile<i32>
      %105 = subi %60, %104 : tile<i32>
      %106 = cmpi less_than %105, %55, signed : tile<i32> -> tile<i1>
      %107 = if %106 -> (tile<i32>) {
        yield %105 : tile<i32>
      } else {
        yield %55 : tile<i32>
      }
      %108 = remi %102, %107 signed : tile<i32>
      %109 = addi %104, %108 : tile<i32>
      %110 = remi %102, %82 signed : tile<i32>
      %111 = divi %110, %107 signed rounding negative_inf : tile<i32>
      %112 = constant <f32: 0.0> : tile<128x512xf32>
      %113 = constant <i32: 0> : tile<i32>
      %114 = constant <i32: 1> : tile<i32>
      %126 = for %115 in (%113 to %68, step %114) : tile<i32> iter_values(%116 = %112) -> (tile<128x512xf32>) {
        %117 = assume bounded<0, ?>, %115 : tile<i32>
        %118, %119 = load_view_tko weak %89[%109, %117] token = %29 : partition_view<tile=(128x64), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<128x64xf16>, token
        %120, %121 = load_view_tko weak %96[%117, %111] token = %38 : partition_view<tile=(64x512), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> tile<64x512xf16>, token
        %122 = constant <i32: 1> : tile<i32>
        %124 = constant <i1: 0> : tile<i1>
        %125 = mmaf %118, %120, %116 : tile<128x64xf16>, tile<64x512xf16>, tile<128x512xf32>
        continue %125 : tile<128x512xf32>
      }
      %127 = ftof %126 : tile<128x512xf32> -> tile<128x512xf16>
      %128 = store_view_tko weak %127, %101[%109, %111] token = %47 : tile<128x512xf16>, partition_view<tile=(128x512), tensor_view<?x?xf16, strides=[?,1]>>, tile<i32> -> token
      continue
    }
    return
  }
}
